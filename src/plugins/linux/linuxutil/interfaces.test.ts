import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EthtoolStats } from '../../../ffi/linux/ethtool.js';
import { LINK_STAT_NAMES, type LinkInfo } from '../../../ffi/linux/netlink.js';
import { InterfaceReader, ethtoolRows, globToRegExp, retinaSkips, type EthtoolSource } from './interfaces.js';

/** A link as the netlink dump gives it: `stats` by name, the others 0. */
function link(name: string, ifindex: number, stats: Record<string, number> = {}, kind = ''): LinkInfo {
  return { name, ifindex, kind, stats: LINK_STAT_NAMES.map((n) => stats[n] ?? 0) };
}

/** The rows of one interface, as the reader writes them (every statistic, in name order). */
function statRows(name: string, stats: Record<string, number>): [Record<string, string>, number][] {
  return [...LINK_STAT_NAMES].sort().map((s) => [{ interface_name: name, statistic_name: s }, stats[s] ?? 0]);
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
  it('reads every counter per interface, skips lo and excluded names, adds ethtool err/drop stats', () => {
    const links = [link('lo', 1, { rx_packets: 5 }), link('lxc12ab', 9, { rx_packets: 3 }, 'veth'), link('eth0', 2, { rx_packets: 10, tx_bytes: 2000, rx_dropped: 1 })];
    const ethtool = fakeEthtool({
      eth0: { ok: true, stats: [['rx_queue_0_drops', 4], ['rx_kicks', 9], ['rx_queue_1_drops', 0], ['tx_errors_total', 2], ['rx_queue_0_drops', 1], ['rx_dropped', 77]] },
    });
    const r = new InterfaceReader(() => links, ['lxc*'], ethtool, 'per_interface_with_veths').read();
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.interfaces, ['eth0']);
    assert.deepEqual(r.rows, [
      ...statRows('eth0', { rx_packets: 10, tx_bytes: 2000, rx_dropped: 1 }),
      [{ interface_name: 'eth0', statistic_name: 'rx_queue_0_drops' }, 5],
      [{ interface_name: 'eth0', statistic_name: 'rx_queue_1_drops' }, 0],
      [{ interface_name: 'eth0', statistic_name: 'tx_errors_total' }, 2],
    ], 'the kernel\'s rx_dropped is kept over the driver\'s');
    assert.equal(r.rows.length, 24 + 3);
    assert.deepEqual(ethtool.asked, ['eth0']);
  });

  it('asks an EOPNOTSUPP interface once, and again only after it went away and came back', () => {
    let links = [link('dummy0', 3, { rx_packets: 1 })];
    const ethtool = fakeEthtool({ dummy0: notSupported });
    const reader = new InterfaceReader(() => links, [], ethtool, 'per_interface_with_veths');
    reader.read();
    const second = reader.read();
    assert.deepEqual(ethtool.asked, ['dummy0']);
    assert.deepEqual(second.failures, [], 'not supported is not a failure');
    assert.deepEqual(second.rows, statRows('dummy0', { rx_packets: 1 }));
    links = [];
    assert.deepEqual(reader.read().rows, [], 'a vanished interface leaves no series');
    links = [link('dummy0', 3)];
    reader.read();
    assert.deepEqual(ethtool.asked, ['dummy0', 'dummy0']);
  });

  it('makes the ethtool client forget interfaces that went away (pod veths churn)', () => {
    let links = [link('lxcaaa', 5), link('lxcbbb', 6)];
    const ethtool = fakeEthtool({ lxcaaa: { ok: true, stats: [] }, lxcbbb: { ok: true, stats: [] } });
    const reader = new InterfaceReader(() => links, [], ethtool, 'per_interface_with_veths');
    reader.read();
    links = [link('lxcbbb', 6)];
    reader.read();
    reader.read();
    assert.deepEqual(ethtool.forgotten, ['lxcaaa']);
  });

  it('asks again when the same name comes back with another ifindex between two reads', () => {
    let links = [link('veth9', 7)];
    const ethtool = fakeEthtool({ veth9: notSupported });
    const reader = new InterfaceReader(() => links, [], ethtool, 'per_interface_with_veths');
    reader.read();
    links = [link('veth9', 42)];
    reader.read();
    assert.deepEqual(ethtool.asked, ['veth9', 'veth9']);
  });

  it('reports other ethtool errors and links without counters, keeping what it read', () => {
    const links: LinkInfo[] = [{ name: 'eth1', ifindex: 4, kind: '', stats: undefined }, link('eth2', 5, { rx_packets: 1 }), link('eth3', 6, { tx_packets: 8 })];
    const ethtool = fakeEthtool({ eth2: { ok: true, stats: [] }, eth3: { ok: false, errno: 5, code: 'EIO', op: 'GSTATS' } });
    const r = new InterfaceReader(() => links, [], ethtool, 'per_interface_with_veths').read();
    assert.deepEqual(r.failures.map((f) => `${f.what}: ${(f.error as Error).message}`), [
      'ethtool GSTATS eth3: EIO',
      'netlink IFLA_STATS64 of eth1: the kernel sent no counters',
    ]);
    assert.deepEqual(r.rows, [...statRows('eth2', { rx_packets: 1 }), ...statRows('eth3', { tx_packets: 8 })]);
  });

  it("all_interfaces (the default, Retina's shape): err/drop ethtool stats summed over interfaces Retina keeps, one series per non-zero statistic, no kernel counters", () => {
    const links = [
      link('lo', 1), link('eth0', 2, { rx_packets: 10 }), link('cbr0', 3, {}, 'bridge'), link('lxc12ab', 4, {}, 'veth'), link('azv99', 5, {}, 'veth'),
      link('veth1', 6, {}, 'veth'), link('veth2', 7, {}, 'veth'), link('ifb0', 8),
    ];
    const veth = (d: number): EthtoolStats => ({ ok: true, stats: [['peer_ifindex', 9], ['rx_queue_0_drops', d], ['rx_queue_0_xdp_tx_errors', 0]] });
    const ethtool = fakeEthtool({
      eth0: { ok: true, stats: [['rx_queue_0_drops', 4], ['rx_dropped', 7], ['tx_packets', 99]] },
      cbr0: veth(100), lxc12ab: veth(100), azv99: veth(100), veth1: veth(1), veth2: veth(2), ifb0: veth(100),
    });
    const reader = new InterfaceReader(() => links, ['ifb*'], ethtool);
    assert.equal(reader.mode, 'all_interfaces');
    const r = reader.read();
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.interfaces, ['eth0', 'veth1', 'veth2']);
    assert.deepEqual(ethtool.asked, ['eth0', 'veth1', 'veth2'], 'skipped interfaces are not asked');
    assert.deepEqual(r.rows, [
      [{ interface_name: 'all_interfaces', statistic_name: 'rx_dropped' }, 7],
      [{ interface_name: 'all_interfaces', statistic_name: 'rx_queue_0_drops' }, 4 + 1 + 2],
    ], "a driver's rx_dropped is Retina's too (no kernel counter shadows it); a sum of 0 is left out, as Retina does");
  });

  it('all_interfaces: as many series with 100 veths as with one', () => {
    const ethtool = (): EthtoolSource => ({ stats: () => ({ ok: true, stats: [['rx_queue_0_drops', 1], ['tx_queue_0_xdp_xmit_errors', 0]] }), forget: () => undefined });
    const veths = (n: number): LinkInfo[] => Array.from({ length: n }, (_, i) => link(`veth${i}`, 10 + i, {}, 'veth'));
    const one = new InterfaceReader(() => veths(1), [], ethtool()).read().rows;
    const hundred = new InterfaceReader(() => veths(100), [], ethtool()).read().rows;
    assert.equal(one.length, 1, 'the zero sum is left out');
    assert.equal(hundred.length, 1);
    assert.equal(hundred[0]?.[1], 100);
  });

  it('per_interface leaves veths out (by the kind the kernel gives, not the name); per_interface_with_veths keeps them', () => {
    const links = [link('lo', 1), link('eth0', 2, { rx_packets: 10 }), link('lxc12ab', 4, { rx_packets: 3 }, 'veth'), link('eth1', 5, { rx_packets: 1 }, 'veth')];
    const no = new InterfaceReader(() => links, [], undefined, 'per_interface').read();
    assert.deepEqual(no.interfaces, ['eth0']);
    assert.deepEqual(no.rows, statRows('eth0', { rx_packets: 10 }));
    const yes = new InterfaceReader(() => links, [], undefined, 'per_interface_with_veths').read();
    assert.deepEqual(yes.interfaces, ['eth0', 'eth1', 'lxc12ab']);
  });

  it("Retina's skip list matches substrings, as Retina's strings.Contains does", () => {
    assert.deepEqual(['lo', 'eth0', 'cbr0', 'lxc_health', 'lxcab', 'azv1234', 'vlo1', 'enP1s1'].filter(retinaSkips), ['lo', 'cbr0', 'lxc_health', 'lxcab', 'azv1234', 'vlo1']);
  });

  it('reports a failed link dump and works without ethtool', () => {
    const r = new InterfaceReader(() => { throw new Error('EPERM'); }, [], undefined).read();
    assert.deepEqual(r.rows, []);
    assert.deepEqual(r.failures.map((f) => `${f.what}: ${(f.error as Error).message}`), ['netlink link dump (RTM_GETLINK): EPERM']);
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
