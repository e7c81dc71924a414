/**
 * `retina-capture` on Windows under Wine: the workload run with node.exe (as the Windows Job runs it)
 * with the `pktmon.cmd` stand-in on PATH (test/windows/fakes; it records its arguments and answers
 * etl2pcap with a recorded pcap) and the fake HCN/HNS DLLs. The pktmon command lines are the ones the
 * Job's env asks for, in order; the tarball in the PVC folder holds the converted pcap (byte for byte
 * the recorded one), a manifest with its packet count and pktmon's drop count, pktmon.log, and the HNS
 * state of `retina-agent diagnose` (metadata/hns.json). A pktmon that cannot start fails the run with
 * its message in the termination log.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { x as untar } from 'tar';
import './wine.js';

const RECORDED = 'test\\fixtures\\capture\\pktmon-recorded.pcap';

function run(extra: Record<string, string>): { status: number | null; out: string; pktmon: string[]; pvc: string; termination: string } {
  const scratch = mkdtempSync(join(tmpdir(), 'retina-capture-'));
  const pvc = mkdtempSync(join(tmpdir(), 'retina-pvc-'));
  const log = join(scratch, 'pktmon-args.txt');
  const term = join(scratch, 'termination-log');
  const r = spawnSync(process.execPath, ['dist/src/cli/capture-workload-main.js', '--work-dir', join(scratch, 'work'), '--termination-log', term], {
    encoding: 'utf8', timeout: 240_000,
    env: {
      ...process.env, CAPTURE_NAME: 'wincap', NODE_HOST_NAME: 'akswin000001', CAPTURE_START_TIMESTAMP: '2026-05-06T07:08:09Z', CAPTURE_DURATION: '2s',
      CAPTURE_MAX_SIZE: '10', CAPTURE_PACKET_SIZE: '128', NETSH_FILTER: 'IPv4.Address=(10.240.0.4,10.240.0.5) IPv6.Address=(fd00::4)', INCLUDE_METADATA: 'true',
      PERSISTENT_VOLUME_CLAIM: pvc, FAKE_PKTMON_LOG: log, FAKE_PKTMON_PCAP: RECORDED, KUBECONFIG: '', ...extra,
    },
  });
  let pktmon: string[] = [];
  let termination = '';
  try {
    pktmon = readFileSync(log, 'utf8').split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  } catch {
    /* pktmon never ran */
  }
  try {
    termination = readFileSync(term, 'utf8');
  } catch {
    /* none */
  }
  return { status: r.status, out: `${r.error?.message ?? ''}\n${r.stdout}\n${r.stderr}`, pktmon, pvc, termination };
}

describe('retina-capture on Windows (pktmon stand-in, fake HNS)', () => {
  it('runs pktmon as the Job asks and delivers the converted capture with the HNS state', { timeout: 300_000 }, async () => {
    const r = run({});
    assert.equal(r.status, 0, r.out);
    const etl = /--file-name (\S+\.etl)/.exec(r.pktmon.find((l) => l.startsWith('start')) ?? '')?.[1] ?? '';
    assert.match(etl, /wincap-akswin000001-20260506070809UTC\\wincap-akswin000001-20260506070809UTC\.etl$/);
    assert.deepEqual(r.pktmon, [
      'filter remove', 'filter add retina-capture-1 -i 10.240.0.4', 'filter add retina-capture-2 -i 10.240.0.5', 'filter add retina-capture-3 -i fd00::4',
      `start --capture --file-name ${etl} --pkt-size 128 --file-size 10`, 'stop', `etl2pcap ${etl} --out ${etl.replace(/\.etl$/, '.pcap')}`,
      'list',
    ]);
    const tarball = 'wincap-akswin000001-20260506070809UTC.tar.gz';
    assert.deepEqual(readdirSync(r.pvc), [tarball]);
    const to = mkdtempSync(join(tmpdir(), 'retina-x-'));
    await untar({ file: join(r.pvc, tarball), cwd: to });
    const folder = join(to, tarball.replace(/\.tar\.gz$/, ''));
    const entries = readdirSync(folder).sort();
    assert.deepEqual(entries, ['manifest.json', 'metadata', 'pktmon.log', 'wincap-akswin000001-20260506070809UTC.pcap'], 'the .etl is removed after conversion');
    const recorded = readFileSync(RECORDED);
    const pcap = readFileSync(join(folder, 'wincap-akswin000001-20260506070809UTC.pcap'));
    assert.ok(pcap.equals(recorded), 'the pcap is not the converted capture');
    const m = JSON.parse(readFileSync(join(folder, 'manifest.json'), 'utf8')) as { os: string; packets: number; dropped: number; files: { sha256: string }[]; filters: { netshFilter: string } };
    assert.equal(m.os, 'windows');
    assert.equal(m.packets, 3);
    assert.equal(m.dropped, 1);
    assert.equal(m.files[0]?.sha256, createHash('sha256').update(recorded).digest('hex'));
    const hns = JSON.parse(readFileSync(join(folder, 'metadata', 'hns.json'), 'utf8')) as { networks: { name: string }[]; endpointCount: number };
    assert.deepEqual(hns.networks.map((n) => n.name), ['azure']);
    assert.equal(hns.endpointCount, 5);
    assert.match(readFileSync(join(folder, 'pktmon.log'), 'utf8'), /> pktmon etl2pcap [\s\S]*Packet drop count: {3}1/);
  });

  it('fails with pktmon\'s own message when it cannot start, and delivers nothing', { timeout: 120_000 }, () => {
    const r = run({ FAKE_PKTMON_FAIL: 'start' });
    assert.equal(r.status, 1, r.out);
    assert.match(r.termination, /pktmon start failed \(exit 183\): Error: another capture session is running\./);
    assert.deepEqual(readdirSync(r.pvc), []);
  });
});
