/**
 * packetparser and a ClusterIP Service, without the real node: the node namespace DNATs a Service
 * address to pod B with nftables (as kube-proxy's nat table does), and pod A talks to the Service.
 * With the conntrack kfuncs (the *_ct programs) every record names B's real address and port: A's
 * requests at A's veth (before the DNAT) and B's replies at A's veth (after the reverse NAT); only
 * a connection's first packet at A's veth, which conntrack has not seen yet, keeps the Service's
 * address. So under the once-per-node rule (src/metrics/module/README.md: a FROM_ENDPOINT record
 * always counts, a TO_ENDPOINT record only when its source is not a pod of this node) each packet
 * counts once: A's requests at A's veth, B's replies at B's veth, exactly the veths' counters.
 * Without translation (forced off) the replies count twice: at B's veth and, from the Service's
 * address, at A's; and the agent says so at start.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { type Netns } from './netns.js';
import { Harness, Topology, requirePacketparser, tearDown, total, type PFlow, type Pod } from './packetparser-topology.js';
import { TCP_SEND, TCP_SINK, UDP_SEND, UDP_SINK } from './traffic.js';

const NET = 247;
const SVC = `10.${NET}.99.10`;
let topo: Topology;
let h: Harness | undefined;
const helpers: ChildProcess[] = [];

before(async () => {
  requirePacketparser();
  topo = new Topology(NET, false); // IPv4 only: the veth counters then count only the test's packets
  const [, b] = [topo.addPod('a', 1), topo.addPod('b', 2)];
  for (const [script, port] of [[UDP_SINK, '7000'], [TCP_SINK, '7001']] as const) {
    const c = b.ns.spawnNode(script, [b.ip, port]);
    helpers.push(c);
    await new Promise((r) => c.stdout?.once('data', r));
  }
  // The Service: TCP 80 -> B:7001, UDP 53 -> B:7000. Made before the plugin starts, so nf_conntrack
  // (and its kfuncs, when it is a module) is loaded when the plugin looks for them.
  topo.node.run('nft', ['-f', '-'], `table ip svc {\n chain pre {\n  type nat hook prerouting priority -100;\n  ip daddr ${SVC} tcp dport 80 dnat to ${b.ip}:7001\n  ip daddr ${SVC} udp dport 53 dnat to ${b.ip}:7000\n }\n}\n`);
  h = new Harness(topo.node);
});

after(() => tearDown(helpers, h, topo));

const STATS = ['rx_packets', 'rx_bytes', 'tx_packets', 'tx_bytes'] as const;
type Stats = Record<(typeof STATS)[number], number>;
const stats = (ns: Netns, ifname: string): Stats => Object.fromEntries(STATS.map((s) => [s, ns.ifStat(ifname, s)])) as Stats;
const delta = (a: Stats, b: Stats): Stats => Object.fromEntries(STATS.map((k) => [k, b[k] - a[k]])) as Stats;
const pb = (x: { packets: number; bytes: number }): [number, number] => [x.packets, x.bytes];

/** The metrics module's rule in remote context (src/metrics/module/README.md "Once per node"): is this record counted? */
const counted = (pods: ReadonlySet<string>) => (f: PFlow): boolean => f.obs === 'FROM_ENDPOINT' || (f.obs === 'TO_ENDPOINT' && !pods.has(f.src));

interface Exchange {
  readonly flows: PFlow[];
  readonly a: Stats;
  readonly b: Stats;
}

/** Runs `send` in pod A between two veth counter readings; the records of protocol `proto` it gave. */
async function exchange(proto: number, send: () => Promise<string>): Promise<Exchange> {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  await hh.settle(300);
  const sa = stats(topo.node, a.veth);
  const sb = stats(topo.node, b.veth);
  assert.match(await send(), /sent \d+/);
  const flows = (await hh.settle(800)).filter((f) => f.proto === proto);
  await hh.call({ op: 'stop' }); // the final sweep reports what the kernel still held
  flows.push(...(await hh.flows()).filter((f) => f.proto === proto));
  return { flows, a: delta(sa, stats(topo.node, a.veth)), b: delta(sb, stats(topo.node, b.veth)) };
}

/** The assertions every translated exchange meets; returns the first-packet records. */
function translated(x: Exchange, a: Pod, b: Pod, port: number): PFlow[] {
  const { flows } = x;
  const fromA = flows.filter((f) => f.obs === 'FROM_ENDPOINT' && f.src === a.ip);
  const toA = flows.filter((f) => f.obs === 'TO_ENDPOINT' && f.dst === a.ip);
  const toB = flows.filter((f) => f.obs === 'TO_ENDPOINT' && f.dst === b.ip);
  const fromB = flows.filter((f) => f.obs === 'FROM_ENDPOINT' && f.src === b.ip);
  assert.equal(fromA.length + toA.length + toB.length + fromB.length, flows.length, 'every record at one of the two veths');
  // what the veths counted, each point exactly
  assert.deepEqual(pb(total(fromA, () => true)), [x.a.rx_packets, x.a.rx_bytes], 'from A = rx of its veth');
  assert.deepEqual(pb(total(toA, () => true)), [x.a.tx_packets, x.a.tx_bytes], 'to A = tx of its veth');
  assert.deepEqual(pb(total(toB, () => true)), [x.b.tx_packets, x.b.tx_bytes], 'to B = tx of its veth');
  assert.deepEqual(pb(total(fromB, () => true)), [x.b.rx_packets, x.b.rx_bytes], 'from B = rx of its veth');
  // names: B's real address and port everywhere but in the first-packet record(s) at A's ingress
  const toService = fromA.filter((f) => f.dst === SVC);
  assert.ok(fromA.every((f) => (f.dst === b.ip && f.dport === port) || (f.dst === SVC)), `A's requests go to B:${port} (or, first packet, to the Service)`);
  assert.ok(toA.every((f) => f.src === b.ip && f.sport === port), `B's replies reach A from B:${port}, not from the Service (${JSON.stringify(toA.filter((f) => f.src !== b.ip).slice(0, 2))})`);
  assert.ok([...toB, ...fromB].every((f) => [f.src, f.dst].sort().join() === [a.ip, b.ip].sort().join()), 'at B: A and B');
  assert.ok(flows.every((f) => f.src !== SVC), 'no record from the Service address');
  // once per node: A's requests counted at A's veth, B's replies at B's veth, nothing else
  const pods = new Set([a.ip, b.ip]);
  const c = flows.filter(counted(pods));
  assert.deepEqual(pb(total(c, (f) => f.src === a.ip)), [x.a.rx_packets, x.a.rx_bytes], 'A -> Service/B counted once: what A sent');
  assert.deepEqual(pb(total(c, (f) => f.src === b.ip)), [x.b.rx_packets, x.b.rx_bytes], 'B -> A counted once: what B sent');
  assert.equal(total(c, () => true).packets, x.a.rx_packets + x.b.rx_packets, 'nothing counted twice');
  return toService;
}

for (const level of ['high', 'low'] as const) {
  test(`${level}: TCP to the Service: one record set, B's real address; only the SYN keeps the Service's; each packet counted once`, async (t) => {
    const hh = h as Harness;
    const [a, b] = [topo.pod('a'), topo.pod('b')];
    const { status } = await hh.start({}, { dataAggregationLevel: level, conntrackReportIntervalMs: 1000 }, [a.ip, b.ip], { gcIntervalMs: 300 });
    assert.deepEqual(status.filter((s) => !s.startsWith('ok')), []);
    const logs = await hh.logs();
    assert.ok(logs.some((l) => l.msg === 'eBPF hooks attached' && l.fields['serviceTranslation'] === true), 'the *_ct programs: this kernel has the conntrack kfuncs');
    const x = await exchange(6, () => a.ns.node(TCP_SEND, ['200000', SVC, '80']));
    const first = translated(x, a, b, 7001);
    assert.deepEqual(first.map((f) => [f.packets, f.flags & 0x12, f.dport]), [[1, 0x02, 80]], 'the SYN, and only it, to the Service address (conntrack had no entry yet)');
    t.diagnostic(`${x.flows.length} records; A sent ${x.a.rx_packets} packets (1 to the Service address), B ${x.b.rx_packets}`);
  });
}

test('high: UDP datagrams to the Service from one socket: the first to the Service address, the rest to B:7000, each counted once', async () => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  await hh.start({}, { dataAggregationLevel: 'high', conntrackReportIntervalMs: 1000 }, [a.ip, b.ip], { gcIntervalMs: 300 });
  const n = 50;
  const x = await exchange(17, () => a.ns.node(UDP_SEND, [String(n), SVC, '53', '32']));
  assert.equal(x.a.rx_packets, n);
  const first = translated(x, a, b, 7000);
  assert.deepEqual(first.map((f) => [f.packets, f.dport]), [[1, 53]], 'the first datagram to the Service address');
  assert.equal(total(x.flows, (f) => f.obs === 'FROM_ENDPOINT' && f.dst === b.ip).packets, n - 1, 'the others to B:7000');
});

test('translation off (a kernel without the conntrack kfuncs): flows keep the Service address, the replies count twice, the agent says so', async () => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  await hh.start({}, { dataAggregationLevel: 'high', conntrackReportIntervalMs: 1000 }, [a.ip, b.ip], { gcIntervalMs: 300, serviceTranslation: false });
  const logs = await hh.logs();
  assert.ok(logs.some((l) => l.level === 'warn' && /no conntrack kfuncs .* counted twice/.test(l.msg)), 'the start log says Service traffic may be counted twice');
  assert.ok(logs.some((l) => l.msg === 'eBPF hooks attached' && l.fields['serviceTranslation'] === false));
  const x = await exchange(6, () => a.ns.node(TCP_SEND, ['100000', SVC, '80']));
  const fromA = x.flows.filter((f) => f.obs === 'FROM_ENDPOINT' && f.src === a.ip);
  const toA = x.flows.filter((f) => f.obs === 'TO_ENDPOINT' && f.dst === a.ip);
  assert.ok(fromA.every((f) => f.dst === SVC && f.dport === 80), 'requests at A\'s veth: to the Service address');
  assert.ok(toA.every((f) => f.src === SVC && f.sport === 80), 'replies at A\'s veth: from the Service address');
  const c = x.flows.filter(counted(new Set([a.ip, b.ip])));
  assert.equal(total(c, (f) => f.src === a.ip).packets, x.a.rx_packets, 'requests once (the copy at B\'s veth comes from a pod of this node)');
  assert.equal(total(c, (f) => f.dst === a.ip).packets, 2 * x.b.rx_packets, 'replies twice: from B at B\'s veth, from the Service at A\'s');
  await hh.call({ op: 'stop' });
});
