/**
 * interface_stats' shapes on a node with 100 pods, as root: a "node" namespace with 100 veth pairs
 * whose other ends sit in a "pods" namespace (rtbpf-* names), plus one non-veth interface (a bridge, as bridge CNIs have) and
 * two veths named as Cilium's and Azure CNI's host ends (lxc…, azv…). An XDP program that drops
 * everything on four host ends makes exact ethtool drop counts (rx_queue_0_xdp_drops): D frames sent
 * from the pod side are D drops. The readers run in the node namespace (linuxutil-probe.js); then the
 * agent itself, with the basic profile's plugins, and the series counts are printed.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { Reading } from '../../src/plugins/linux/linuxutil/collect.js';
import { bpfHelper } from '../ebpf/c-helper.js';
import { Netns, NsAgent, requireKernel, sh } from '../ebpf/netns.js';
import { UDP_SEND } from '../ebpf/traffic.js';

const PODS = 100;
const PROBE = fileURLToPath(new URL('./linuxutil-probe.js', import.meta.url));
/** Host ends with an XDP drop program, and the frames sent to each. */
const DROPS: Readonly<Record<string, number>> = { rtis0: 7, rtis1: 11, lxcrt0: 13, azvrt0: 17 };
/** Retina's shape sums only interfaces whose name has none of lo, cbr0, lxc, azv. */
const SUMMED = (DROPS['rtis0'] as number) + (DROPS['rtis1'] as number);

let node: Netns | undefined;
let pods: Netns | undefined;

const probe = (mode: string): Reading => JSON.parse(sh('ip', ['netns', 'exec', (node as Netns).name, process.execPath, PROBE, mode])) as Reading;
const ifNames = (r: Reading): string[] => [...new Set(r.interfaceStats.map(([l]) => l['interface_name'] as string))].sort();

/** `ethtool -S` of a node interface: every stat whose name contains err or drop. */
function errDrop(ifname: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of (node as Netns).run('ethtool', ['-S', ifname]).split('\n')) {
    const m = /^\s+([^:]+):\s+(\d+)$/.exec(line);
    if (m && /err|drop/i.test(m[1] as string)) out.set(m[1] as string, (out.get(m[1] as string) ?? 0) + Number(m[2]));
  }
  return out;
}

before(async () => {
  requireKernel();
  node = new Netns('ifs-node');
  pods = new Netns('ifs-pods');
  const hosts = [...Array.from({ length: PODS - 2 }, (_, i) => `rtis${i}`), 'lxcrt0', 'azvrt0'];
  const batch = hosts.map((h, i) => `link add ${h} netns ${(node as Netns).name} type veth peer name rtisp${i} netns ${(pods as Netns).name}`);
  sh('ip', ['-batch', '-'], `${batch.join('\n')}\n`);
  (node as Netns).run('ip', ['link', 'add', 'rtisbr0', 'type', 'bridge']);
  const xdp = bpfHelper('test/linux/xdp-drop.bpf.c');
  for (const [i, h] of hosts.entries()) {
    for (const [ns, ifname] of [[node as Netns, h], [pods as Netns, `rtisp${i}`]] as const) {
      ns.run('sysctl', ['-qw', `net.ipv6.conf.${ifname}.disable_ipv6=1`]);
    }
  }
  (node as Netns).run('ip', ['-batch', '-'], `${[...hosts, 'rtisbr0'].map((h) => `link set ${h} up`).join('\n')}\n`);
  (pods as Netns).run('ip', ['-batch', '-'], `${hosts.map((_, i) => `link set rtisp${i} up`).join('\n')}\n`);
  // Four pairs carry traffic, each its own /24; the pod side knows the host end's MAC (no ARP, whose
  // requests the XDP program would drop too), so exactly D frames reach each host end.
  for (const [k, h] of Object.keys(DROPS).entries()) {
    const i = hosts.indexOf(h);
    (node as Netns).run('ip', ['addr', 'add', `10.231.${40 + k}.1/24`, 'dev', h]);
    (pods as Netns).run('ip', ['addr', 'add', `10.231.${40 + k}.2/24`, 'dev', `rtisp${i}`]);
    const mac = JSON.parse((node as Netns).run('ip', ['-j', 'link', 'show', h]))[0].address as string;
    (pods as Netns).run('ip', ['neigh', 'replace', `10.231.${40 + k}.1`, 'lladdr', mac, 'dev', `rtisp${i}`, 'nud', 'permanent']);
    (node as Netns).run('ip', ['link', 'set', 'dev', h, 'xdpdrv', 'obj', xdp, 'sec', 'xdp']);
  }
  for (const [k, d] of Object.values(DROPS).entries()) await (pods as Netns).node(UDP_SEND, [String(d), `10.231.${40 + k}.1`, '9', '64']);
});

after(() => {
  node?.destroy();
  pods?.destroy();
});

describe(`interface_stats on a node with ${PODS} pod veths`, { timeout: 300_000 }, () => {
  it("all_interfaces (the default): one series per non-zero err/drop statistic, Retina's sum and exclusions", () => {
    for (const [h, d] of Object.entries(DROPS)) assert.equal(errDrop(h).get('rx_queue_0_xdp_drops'), d, `${h}: the XDP program dropped exactly the frames sent`);
    const r = probe('all_interfaces');
    assert.deepEqual(r.failures, []);
    assert.deepEqual(ifNames(r), ['all_interfaces']);
    // What Retina's shape gives from ethtool -S of every interface it keeps (the 98 rtis* veths).
    const expected = new Map<string, number>();
    for (const l of JSON.parse((node as Netns).run('ip', ['-j', 'link', 'show'])) as { ifname: string }[]) {
      if (/lo|cbr0|lxc|azv/.test(l.ifname) || l.ifname === 'rtisbr0') continue; // the bridge: no ethtool stats
      for (const [k, v] of errDrop(l.ifname)) expected.set(k, (expected.get(k) ?? 0) + v);
    }
    const nonZero = [...expected].filter(([, v]) => v !== 0).sort((a, b) => (a[0] < b[0] ? -1 : 1));
    assert.deepEqual(r.interfaceStats.map(([l, v]) => [l['statistic_name'], v]), nonZero);
    assert.deepEqual(nonZero, [['rx_queue_0_xdp_drops', SUMMED]], 'lxcrt0 and azvrt0 are left out of the sum');
  });

  it('per_interface: every interface but the veths (the bridge only here), each with its kernel counters', () => {
    const r = probe('per_interface');
    assert.deepEqual(r.failures, []);
    assert.deepEqual(ifNames(r), ['rtisbr0']);
    assert.equal(r.interfaceStats.length, 24);
  });

  it('per_interface_with_veths: every interface, veths included, with their own drop counts', () => {
    const r = probe('per_interface_with_veths');
    assert.deepEqual(r.failures, []);
    assert.equal(ifNames(r).length, PODS + 1);
    for (const [h, d] of Object.entries(DROPS)) {
      assert.equal(r.interfaceStats.find(([l]) => l['interface_name'] === h && l['statistic_name'] === 'rx_queue_0_xdp_drops')?.[1], d, h);
    }
  });

  it('prints the series count of the basic profile (the chart\'s default plugins) on this node: default against per-interface with veths', async () => {
    const counts: Record<string, { total: number; interfaceStats: number; families: string }> = {};
    for (const mode of ['all_interfaces', 'per_interface_with_veths']) {
      await using agent = new NsAgent(node as Netns, `enabledPlugin: [packetforward, dropreason, linuxutil, dns]\nmetricsIntervalDuration: 200ms\ninterfaceStatsMode: ${mode}\n`);
      await agent.started(['linuxutil']);
      const text = await agent.until(() => {
        const t = agent.metrics();
        return /^networkobservability_interface_stats\{/m.test(t) ? t : undefined;
      }, 'interface_stats published');
      const series = text.split('\n').filter((l) => l.startsWith('networkobservability_'));
      const byFamily = new Map<string, number>();
      for (const l of series) {
        const f = (/^networkobservability_(\w+)/.exec(l) as RegExpExecArray)[1] as string;
        byFamily.set(f, (byFamily.get(f) ?? 0) + 1);
      }
      counts[mode] = {
        total: series.length,
        interfaceStats: byFamily.get('interface_stats') ?? 0,
        families: [...byFamily].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([f, n]) => `${f} ${n}`).join(', '),
      };
    }
    const def = counts['all_interfaces'] as { total: number; interfaceStats: number; families: string };
    const veth = counts['per_interface_with_veths'] as { total: number; interfaceStats: number; families: string };
    process.stdout.write(`basic profile, ${PODS} pod veths: networkobservability_* series ${def.total} (interface_stats ${def.interfaceStats}, Retina's shape) ` +
      `vs ${veth.total} per interface with veths (interface_stats ${veth.interfaceStats})\n  default by family: ${def.families}\n`);
    assert.equal(def.interfaceStats, 1, "Retina's shape: one series, the non-zero xdp drop sum");
    assert.ok(veth.interfaceStats >= (PODS + 1) * 24, `per interface: at least 24 per interface (${veth.interfaceStats})`);
  });
});
