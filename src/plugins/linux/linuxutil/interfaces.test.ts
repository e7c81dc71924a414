import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { EthtoolStats } from '../../../ffi/linux/ethtool.js';
import { InterfaceReader, ethtoolRows, globToRegExp, type EthtoolSource } from './interfaces.js';

const roots: string[] = [];
after(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

/** A fake /sys/class/net: `{ if: { stat: 'text' } }`. */
function sysfs(ifs: Record<string, Record<string, string>>): string {
  const root = mkdtempSync(join(tmpdir(), 'rtlu-sys-'));
  roots.push(root);
  let index = 1;
  for (const [name, stats] of Object.entries(ifs)) addInterface(root, name, stats, index++);
  return root;
}
function addInterface(root: string, name: string, stats: Record<string, string>, ifindex: number): void {
  mkdirSync(join(root, name, 'statistics'), { recursive: true });
  writeFileSync(join(root, name, 'ifindex'), `${ifindex}\n`);
  for (const [k, v] of Object.entries(stats)) writeFileSync(join(root, name, 'statistics', k), v);
}

/** A hand-written ethtool source that answers from a table and records who was asked. */
function fakeEthtool(answers: Record<string, EthtoolStats>): EthtoolSource & { asked: string[]; forgotten: string[] } {
  const asked: string[] = [];
  const forgotten: string[] = [];
  return {
    asked, forgotten,
    stats(name) {
      asked.push(name);
      return answers[name] ?? { ok: false, errno: 19, code: 'ENODEV', op: 'GSSET_INFO' };
    },
    forget: (name) => void forgotten.push(name),
  };
}
const notSupported: EthtoolStats = { ok: false, errno: 95, code: 'EOPNOTSUPP', op: 'GSSET_INFO' };

describe('InterfaceReader', () => {
  it('reads every statistics file per interface, skips lo and excluded names, adds ethtool err/drop stats', async () => {
    const root = sysfs({
      lo: { rx_packets: '5\n' },
      eth0: { rx_packets: '10\n', tx_bytes: '2000\n', rx_dropped: '1\n' },
      lxc12ab: { rx_packets: '3\n' },
    });
    writeFileSync(join(root, 'bonding_masters'), 'bond0\n'); // a file, not an interface
    const ethtool = fakeEthtool({
      eth0: { ok: true, stats: [['rx_queue_0_drops', 4], ['rx_kicks', 9], ['rx_queue_1_drops', 0], ['tx_errors_total', 2], ['rx_queue_0_drops', 1], ['rx_dropped', 77]] },
    });
    const r = await new InterfaceReader(root, ['lxc*'], ethtool).read();
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.interfaces, ['eth0']);
    assert.deepEqual(r.rows, [
      [{ interface_name: 'eth0', statistic_name: 'rx_dropped' }, 1],
      [{ interface_name: 'eth0', statistic_name: 'rx_packets' }, 10],
      [{ interface_name: 'eth0', statistic_name: 'tx_bytes' }, 2000],
      [{ interface_name: 'eth0', statistic_name: 'rx_queue_0_drops' }, 5],
      [{ interface_name: 'eth0', statistic_name: 'rx_queue_1_drops' }, 0],
      [{ interface_name: 'eth0', statistic_name: 'tx_errors_total' }, 2],
    ]);
    assert.deepEqual(ethtool.asked, ['eth0']);
  });

  it('asks an EOPNOTSUPP interface once, and again only after it went away and came back', async () => {
    const root = sysfs({ dummy0: { rx_packets: '1' } });
    const ethtool = fakeEthtool({ dummy0: notSupported });
    const reader = new InterfaceReader(root, [], ethtool);
    await reader.read();
    const second = await reader.read();
    assert.deepEqual(ethtool.asked, ['dummy0']);
    assert.deepEqual(second.failures, [], 'not supported is not a failure');
    assert.deepEqual(second.rows, [[{ interface_name: 'dummy0', statistic_name: 'rx_packets' }, 1]]);
    rmSync(join(root, 'dummy0'), { recursive: true });
    assert.deepEqual((await reader.read()).rows, [], 'a vanished interface leaves no series');
    addInterface(root, 'dummy0', { rx_packets: '0' }, 1);
    await reader.read();
    assert.deepEqual(ethtool.asked, ['dummy0', 'dummy0']);
  });

  it('makes the ethtool client forget interfaces that went away (pod veths churn)', async () => {
    const root = sysfs({ lxcaaa: { rx_packets: '1' }, lxcbbb: { rx_packets: '1' } });
    const ethtool = fakeEthtool({ lxcaaa: { ok: true, stats: [] }, lxcbbb: { ok: true, stats: [] } });
    const reader = new InterfaceReader(root, [], ethtool);
    await reader.read();
    rmSync(join(root, 'lxcaaa'), { recursive: true });
    await reader.read();
    await reader.read();
    assert.deepEqual(ethtool.forgotten, ['lxcaaa']);
  });

  it('asks again when the same name comes back with another ifindex between two reads', async () => {
    const root = sysfs({ veth9: { rx_packets: '1' } });
    const ethtool = fakeEthtool({ veth9: notSupported });
    const reader = new InterfaceReader(root, [], ethtool);
    await reader.read();
    writeFileSync(join(root, 'veth9', 'ifindex'), '42\n');
    await reader.read();
    assert.deepEqual(ethtool.asked, ['veth9', 'veth9']);
  });

  it('reports other ethtool errors and bad counter files, keeping what it read', async () => {
    const root = sysfs({ eth1: { rx_packets: 'lots\n', tx_packets: '8\n' }, eth2: { rx_packets: '1' } });
    const ethtool = fakeEthtool({ eth1: { ok: false, errno: 5, code: 'EIO', op: 'GSTATS' }, eth2: { ok: true, stats: [] } });
    const r = await new InterfaceReader(root, [], ethtool).read();
    assert.deepEqual(r.failures.map((f) => `${f.what}: ${(f.error as Error).message}`), [
      `${join(root, 'eth1/statistics/rx_packets')}: not a number: "lots"`,
      'ethtool GSTATS eth1: EIO',
    ]);
    assert.deepEqual(r.rows, [
      [{ interface_name: 'eth1', statistic_name: 'tx_packets' }, 8],
      [{ interface_name: 'eth2', statistic_name: 'rx_packets' }, 1],
    ]);
  });

  it('reports an unreadable /sys/class/net and works without ethtool', async () => {
    const missing = join(tmpdir(), 'rtlu-does-not-exist');
    const r = await new InterfaceReader(missing, [], undefined).read();
    assert.deepEqual(r.rows, []);
    assert.equal((r.failures[0]?.error as NodeJS.ErrnoException).code, 'ENOENT');
  });
});

describe('helpers', () => {
  it('globToRegExp matches whole names with * as any run', () => {
    assert.ok(globToRegExp('lxc*').test('lxc_health'));
    assert.ok(!globToRegExp('lxc*').test('xlxc'));
    assert.ok(globToRegExp('*-nic').test('a.b-nic'));
    assert.ok(!globToRegExp('eth0').test('eth01'));
    assert.ok(!globToRegExp('a.b').test('axb'), 'dots are literal');
  });

  it('ethtoolRows keeps err/drop names case-insensitively and sums repeats', () => {
    assert.deepEqual(ethtoolRows({ ok: true, stats: [['RX_CRC_ERRORS', 1], ['tx_packets', 5], ['RX_CRC_ERRORS', 2], ['rx_Drop_x', 0]] }), [
      ['RX_CRC_ERRORS', 3],
      ['rx_Drop_x', 0],
    ]);
  });
});
