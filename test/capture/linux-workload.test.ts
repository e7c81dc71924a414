/**
 * `retina-capture` on Linux for real: run as root inside a network namespace the test creates, with
 * UDP traffic sent from a second namespace over a veth pair. The pcap read back with `tcpdump -r`
 * holds only the filtered packets, as many as the manifest says; the manifest's sha256 matches the
 * pcap; the metadata files hold this namespace's state. The capture stops on its duration, on the
 * max size (polled) and on SIGTERM (what it has is still delivered); a bad filter and a host path
 * that leaves its base folder are refused with clear messages and nothing is captured.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nodeBinary } from '../e2e/agent-process.js';
import { extract, freshDir, pcapLines, runWorkload, sh } from './workload-run.js';

const tag = `${process.pid % 100000}`;
const NS_A = `cr-a-${tag}`;
const NS_B = `cr-b-${tag}`;
const IF_A = `cra${tag}`;
const IF_B = `crb${tag}`;
const IP_A = '10.213.7.1';
const IP_B = '10.213.7.2';
const TS = '2026-01-02T03:04:05Z';

/** Sends `count` UDP datagrams of `size` bytes from NS_B to IP_A:port. */
function sendUdp(port: number, count: number, size = 64): void {
  const script = `import dgram from 'node:dgram';
const s = dgram.createSocket('udp4'); const buf = Buffer.alloc(${size}, 0x61);
for (let i = 0; i < ${count}; i++) { await new Promise((r) => s.send(buf, ${port}, '${IP_A}', r)); if (i % 50 === 49) await new Promise((r) => setTimeout(r, 2)); }
s.close();`;
  sh('ip', ['netns', 'exec', NS_B, nodeBinary(), '--input-type=module', '-e', script]);
}

const baseEnv = (name: string, extra: Record<string, string>): Record<string, string> => ({
  CAPTURE_NAME: name, NODE_HOST_NAME: 'node-a', CAPTURE_START_TIMESTAMP: TS, INCLUDE_METADATA: 'false', ...extra,
});

const sha256 = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');

describe('retina-capture on Linux (tcpdump in a test namespace, real traffic)', { timeout: 240_000 }, () => {
  let base: string;
  before(() => {
    if (process.getuid?.() !== 0) throw new Error('the capture workload tests need root (they create network namespaces and run tcpdump)');
    for (const ns of [NS_A, NS_B]) {
      sh('ip', ['netns', 'add', ns]);
      sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    }
    sh('ip', ['link', 'add', IF_A, 'netns', NS_A, 'type', 'veth', 'peer', 'name', IF_B, 'netns', NS_B]);
    sh('ip', ['-n', NS_A, 'addr', 'add', `${IP_A}/24`, 'dev', IF_A]);
    sh('ip', ['-n', NS_B, 'addr', 'add', `${IP_B}/24`, 'dev', IF_B]);
    sh('ip', ['-n', NS_A, 'link', 'set', IF_A, 'up']);
    sh('ip', ['-n', NS_B, 'link', 'set', IF_B, 'up']);
    // Rules the metadata must show: an nft table and an iptables rule of the captured namespace.
    sh('ip', ['netns', 'exec', NS_A, 'nft', 'add', 'table', 'inet', 'crmeta']);
    sh('ip', ['netns', 'exec', NS_A, 'iptables-nft', '-A', 'INPUT', '-p', 'udp', '--dport', '7777', '-j', 'ACCEPT']);
    base = freshDir('cr-hostpath-');
  });
  after(() => {
    for (const ns of [NS_A, NS_B]) {
      try {
        sh('ip', ['netns', 'del', ns]);
      } catch {
        /* gone */
      }
    }
  });

  it('captures only the filtered traffic until the duration is over; manifest, sha256 and metadata are right', async () => {
    const hostPath = join(base, 'run1');
    const run = runWorkload(baseEnv('cap1', {
      CAPTURE_DURATION: '4s', INCLUDE_METADATA: 'true', TCPDUMP_FILTER: `host ${IP_A} and udp port 5555`, HOSTPATH: hostPath, RETINA_CAPTURE_HOSTPATH_BASE_DIR: base,
    }), { netns: NS_A });
    await run.capturing;
    const t0 = Date.now();
    sendUdp(5555, 20);
    sendUdp(6666, 30);
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.now() - t0 >= 2500, 'stopped before its duration');
    const tarball = join(hostPath, 'cap1-node-a-20260102030405UTC.tar.gz');
    assert.deepEqual(readdirSync(hostPath), ['cap1-node-a-20260102030405UTC.tar.gz']);
    const x = extract(tarball);
    assert.equal(x.manifest.stopReason, 'duration');
    assert.equal(x.manifest.captureName, 'cap1');
    assert.equal(x.manifest.nodeName, 'node-a');
    assert.equal(x.manifest.filters['effective'], `host ${IP_A} and udp port 5555`);
    assert.equal(x.manifest.files.length, 1);
    const file = x.manifest.files[0] as { name: string; size: number; sha256: string };
    assert.equal(file.name, 'cap1-node-a-20260102030405UTC.pcap');
    const pcap = join(x.folder, file.name);
    assert.equal(file.sha256, sha256(pcap));
    assert.equal(file.size, statSync(pcap).size);
    const lines = pcapLines(pcap);
    assert.equal(lines.length, 20, lines.join('\n'));
    for (const l of lines) assert.match(l, new RegExp(`${IP_B.replaceAll('.', '\\.')}\\.\\d+ > ${IP_A.replaceAll('.', '\\.')}\\.5555: UDP`));
    assert.equal(x.manifest.packets, 20);
    assert.equal(x.manifest.dropped, 0);
    assert.equal(x.manifest.metadata, true);
    for (const f of ['manifest.json', 'tcpdump.log', 'metadata/ip-resources.txt', 'metadata/iptables-rules.txt', 'metadata/nftables.txt', 'metadata/socket-stats.txt', 'metadata/proc-net/dev', 'metadata/proc-sys-net/ipv4/ip_forward']) {
      assert.ok(x.entries.includes(f), `${f} missing from ${x.entries.filter((e) => !e.includes('/') || e.split('/').length < 3).join(', ')}`);
    }
    const ipRes = readFileSync(join(x.folder, 'metadata/ip-resources.txt'), 'utf8');
    assert.match(ipRes, new RegExp(`"ifname":"${IF_A}"`), 'the namespace\'s addresses');
    assert.match(ipRes, new RegExp(`10\\.213\\.7\\.0/24 dev ${IF_A}`), 'the namespace\'s routes');
    assert.match(ipRes, /### ip -4 route show table all[\s\S]*local 10\.213\.7\.1 dev/, 'the local table too');
    assert.match(readFileSync(join(x.folder, 'metadata/proc-net/dev'), 'utf8'), new RegExp(IF_A));
    assert.match(readFileSync(join(x.folder, 'metadata/nftables.txt'), 'utf8'), /table inet crmeta/);
    assert.match(readFileSync(join(x.folder, 'metadata/iptables-rules.txt'), 'utf8'), /### iptables-nft-save -c[\s\S]*-A INPUT -p udp -m udp --dport 7777 -j ACCEPT/);
    assert.match(readFileSync(join(x.folder, 'metadata/socket-stats.txt'), 'utf8'), /### ss -s\nTotal:/);
    assert.match(readFileSync(join(x.folder, 'tcpdump.log'), 'utf8'), /20 packets captured/);
  });

  it('stops at the max size (polled) and says so', async () => {
    const hostPath = join(base, 'run2');
    const run = runWorkload(baseEnv('cap2', { CAPTURE_DURATION: '90s', CAPTURE_MAX_SIZE: '1', TCPDUMP_FILTER: 'udp port 5555', HOSTPATH: hostPath }), { netns: NS_A });
    await run.capturing;
    const t0 = Date.now();
    sendUdp(5555, 1000, 1400);
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.now() - t0 < 30_000, `took ${Date.now() - t0} ms to stop at the max size`);
    const x = extract(join(hostPath, readdirSync(hostPath)[0] as string));
    assert.equal(x.manifest.stopReason, 'maxSize');
    assert.ok((x.manifest.files[0]?.size ?? 0) >= 1_000_000, `pcap of ${x.manifest.files[0]?.size} bytes`);
    assert.ok(!x.entries.some((e) => e.startsWith('metadata')), 'INCLUDE_METADATA=false still wrote metadata');
  });

  it('stops on SIGTERM and still delivers what it captured', async () => {
    const hostPath = join(base, 'run3');
    const run = runWorkload(baseEnv('cap3', { CAPTURE_DURATION: '10m', TCPDUMP_FILTER: 'udp port 5555', HOSTPATH: hostPath }), { netns: NS_A });
    await run.capturing;
    sendUdp(5555, 7);
    await new Promise((r) => setTimeout(r, 500));
    run.child.kill('SIGTERM');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const x = extract(join(hostPath, readdirSync(hostPath)[0] as string));
    assert.equal(x.manifest.stopReason, 'signal');
    assert.equal(x.manifest.packets, 7);
    assert.equal(pcapLines(join(x.folder, x.manifest.files[0]?.name as string)).length, 7);
  });

  it('refuses a filter tcpdump cannot compile, naming the variable, before capturing', async () => {
    const hostPath = join(base, 'run4');
    const r = await runWorkload(baseEnv('cap4', { PCAP_FILTER: 'udp port 5555 andd tcp', HOSTPATH: hostPath }), { netns: NS_A }).done;
    assert.equal(r.code, 1);
    assert.match(r.termination, /the capture filter "udp port 5555 andd tcp" \(from PCAP_FILTER\) is not valid: .*syntax error/);
    assert.match(r.stderr, /PCAP_FILTER/);
    assert.deepEqual(readdirSync(hostPath), [], 'a tarball was written for a refused capture');
    const flag = await runWorkload(baseEnv('cap4', { TCPDUMP_FILTER: 'udp -w /etc/x', HOSTPATH: hostPath })).done;
    assert.equal(flag.code, 2);
    assert.match(flag.termination, /TCPDUMP_FILTER=.*token starting with '-'/);
  });

  it('refuses a host path that leaves its base folder (.. or a symlink), creating nothing outside', async () => {
    const outside = freshDir('cr-outside-');
    const r1 = await runWorkload(baseEnv('cap5', { HOSTPATH: `${base}/../${outside.split('/').pop()}`, RETINA_CAPTURE_HOSTPATH_BASE_DIR: base })).done;
    assert.equal(r1.code, 1);
    assert.match(r1.termination, /HOSTPATH=.*holds '\.\.': refused/);
    symlinkSync(outside, join(base, 'link'));
    const r2 = await runWorkload(baseEnv('cap5', { HOSTPATH: join(base, 'link', 'sub'), RETINA_CAPTURE_HOSTPATH_BASE_DIR: base })).done;
    assert.equal(r2.code, 1);
    assert.match(r2.termination, /HOSTPATH=.*leads out of .* through a symlink/);
    const r3 = await runWorkload(baseEnv('cap5', { HOSTPATH: '/var/tmp/elsewhere', RETINA_CAPTURE_HOSTPATH_BASE_DIR: base })).done;
    assert.equal(r3.code, 1);
    assert.match(r3.termination, /HOSTPATH="\/var\/tmp\/elsewhere" is not under the host path base folder/);
    assert.deepEqual(readdirSync(outside), [], 'something was created outside the base folder');
    assert.equal(existsSync('/var/tmp/elsewhere'), false);
    mkdirSync(join(base, 'ok'));
  });
});
