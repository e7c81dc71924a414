/**
 * packetparser on a real kernel, high aggregation: a paced TCP transfer from pod A to pod B gives a
 * handful of records whose packets and bytes sum exactly to what the veths counted, with exactly one
 * SYN and one SYN-ACK, and the connection leaves the table at its close; short connections closed by
 * FINs or a RST come whole in at most four records a veth, with no sweep; the table's evictions when
 * full are counted; sampling 1 in N reports about 1/N of the packets; an idle UDP flow is reported by
 * the sweep and the conntrack_* gauges equal its counts; start-stop-start-stop leaves nothing; with
 * enablePodLevel off nothing loads.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { TCP_FLAG_SLOTS } from '../../src/flow/index.js';
import { runPacketparser } from '../../src/plugins/linux/packetparser/index.js';
import { fakeContext } from './fake-context.js';
import { bpfIdsOf, leftoversAfterStop, metric, scaled, sleep, type Netns } from './netns.js';
import { Harness, Topology, requirePacketparser, tearDown, total, type PFlow } from './packetparser-topology.js';
import { TCP_PACED_SEND, TCP_SHORT, TCP_SINK, UDP_PORTS, UDP_SEND, UDP_SINK } from './traffic.js';

let topo: Topology;
let h: Harness | undefined;
const helpers: ChildProcess[] = [];

before(async () => {
  requirePacketparser();
  topo = new Topology(242, false); // IPv4 only: IPv6 links chatter, and the veth counters would count it
  const [, b] = [topo.addPod('a', 1), topo.addPod('b', 2)];
  for (const [script, port] of [[UDP_SINK, '7000'], [TCP_SINK, '7001']] as const) {
    const c = b.ns.spawnNode(script, [b.ip, port]);
    helpers.push(c);
    await new Promise((r) => c.stdout?.once('data', r));
  }
  h = new Harness(topo.node);
});

after(() => tearDown(helpers, h, topo));

const STATS = ['rx_packets', 'rx_bytes', 'tx_packets', 'tx_bytes'] as const;
function stats(ns: Netns, ifname: string): Record<(typeof STATS)[number], number> {
  return Object.fromEntries(STATS.map((s) => [s, ns.ifStat(ifname, s)])) as Record<(typeof STATS)[number], number>;
}
const delta = <T extends Record<string, number>>(a: T, b: T): T => Object.fromEntries(Object.keys(a).map((k) => [k, (b[k] as number) - (a[k] as number)])) as T;

/** Packets per flag slot, whether the record aggregated (counts) or is one packet (flags). */
function flagCount(flows: readonly PFlow[], slot: (typeof TCP_FLAG_SLOTS)[number]): number {
  const i = TCP_FLAG_SLOTS.indexOf(slot);
  let n = 0;
  for (const f of flows) {
    if (f.counts) n += f.counts[i] ?? 0;
    else if (slot === 'SYN') n += (f.flags & 0x12) === 0x02 ? 1 : 0;
    else if (slot === 'SYNACK') n += (f.flags & 0x12) === 0x12 ? 1 : 0;
    else if (slot === 'FIN') n += f.flags & 0x01 ? 1 : 0;
    else if (slot === 'RST') n += f.flags & 0x04 ? 1 : 0;
  }
  return n;
}

type Totals = ReturnType<typeof total>;
interface Points { readonly fromA: Totals; readonly toA: Totals; readonly toB: Totals; readonly fromB: Totals }

/** What the records carry at the four points: the node end of a pod's veth receives what the pod sends (FROM_ENDPOINT) and sends what it receives. */
function points(flows: readonly PFlow[], a: string, b: string): Points {
  return {
    fromA: total(flows, (f) => f.obs === 'FROM_ENDPOINT' && f.src === a),
    toA: total(flows, (f) => f.obs === 'TO_ENDPOINT' && f.dst === a),
    toB: total(flows, (f) => f.obs === 'TO_ENDPOINT' && f.dst === b),
    fromB: total(flows, (f) => f.obs === 'FROM_ENDPOINT' && f.src === b),
  };
}

type VethDelta = ReturnType<typeof stats>;

/** Each point's packets and bytes equal its veth's counters. */
function assertVeths(p: Points, da: VethDelta, db: VethDelta): void {
  assert.deepEqual([p.fromA.packets, p.fromA.bytes], [da.rx_packets, da.rx_bytes], 'from A = rx of its veth');
  assert.deepEqual([p.toA.packets, p.toA.bytes], [da.tx_packets, da.tx_bytes], 'to A = tx of its veth');
  assert.deepEqual([p.toB.packets, p.toB.bytes], [db.tx_packets, db.tx_bytes], 'to B = tx of its veth');
  assert.deepEqual([p.fromB.packets, p.fromB.bytes], [db.rx_packets, db.rx_bytes], 'from B = rx of its veth');
}

/** The records of the veth of the pod with address `ip`. */
const atVeth = (flows: readonly PFlow[], ip: string): PFlow[] => flows.filter((f) => (f.obs === 'FROM_ENDPOINT' ? f.src : f.dst) === ip);

test('high: a paced TCP transfer: few records, whose sums equal the veth counters exactly', async (t) => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  const { status } = await hh.start({}, { dataAggregationLevel: 'high', conntrackReportIntervalMs: 1000, enableConntrackMetrics: true }, [a.ip], { gcIntervalMs: 300 });
  assert.deepEqual(status.filter((s) => !s.startsWith('ok')), []);
  await hh.call({ op: 'runstats' });
  await hh.settle(300);
  const sa0 = stats(topo.node, a.veth);
  const sb0 = stats(topo.node, b.veth);
  const out = await a.ns.node(TCP_PACED_SEND, ['400000', b.ip, '7001', '16000', '100']);
  assert.match(out, /sent 400000/);
  const flows = await hh.settle(800);
  const da = delta(sa0, stats(topo.node, a.veth));
  const db = delta(sb0, stats(topo.node, b.veth));
  const tcp = flows.filter((f) => f.proto === 6);
  assert.equal(tcp.length, flows.length, 'only the transfer');
  const at = points(tcp, a.ip, b.ip);
  assertVeths(at, da, db);
  const { fromA, toA, toB, fromB } = at;
  const packets = fromA.packets + toA.packets + toB.packets + fromB.packets;
  t.diagnostic(`${tcp.length} records for ${packets} packets (${[fromA, toA, toB, fromB].map((x) => x.records).join('/')} at the four points)`);
  for (const [name, r] of hh.runStats()) if (r.runs) t.diagnostic(`${name}: ${r.runs} runs, ${Math.round(r.ns / r.runs)} ns per packet (high)`);
  assert.ok(tcp.length * 3 < packets, `aggregated: ${tcp.length} records for ${packets} packets`);
  const intervalReports = tcp.filter((f) => f.packets > 1 && (f.flags & 0x07) === 0);
  assert.ok(intervalReports.length >= 4, `interval reports in both directions at both veths (${intervalReports.length})`);
  const atA = atVeth(tcp, a.ip);
  const atB = atVeth(tcp, b.ip);
  for (const [where, fl] of [['A', atA], ['B', atB]] as const) {
    assert.equal(flagCount(fl, 'SYN'), 1, `one SYN at ${where}`);
    assert.equal(flagCount(fl, 'SYNACK'), 1, `one SYN-ACK at ${where}`);
    assert.ok(fl.every((f) => f.reply === (f.src === b.ip)), `is_reply at ${where}`);
  }
  assert.ok(atA.every((f) => f.dir === 'EGRESS') && atB.every((f) => f.dir === 'INGRESS'), 'direction: A started it');

  // The connection closed (FINs, then the last ACK): it left the table at once at both veths, so the
  // conntrack_* gauges, sums over live connections, are back to nothing at the next sweep.
  await sleep(700);
  const text = await hh.call<string>({ op: 'metrics' });
  for (const g of ['total_connections', 'packets_tx', 'packets_rx', 'bytes_tx', 'bytes_rx']) {
    assert.equal(metric(text, `networkobservability_conntrack_${g}`), 0, `conntrack_${g}: the closed connection left the table`);
  }
  await hh.call({ op: 'stop' });
});

for (const how of ['fin', 'rst'] as const) test(`high: short TCP connections closed by ${how === 'fin' ? 'FINs' : 'a RST'} are reported at their close, whole, with no sweep; at most four records a veth each`, async (t) => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  // No sweep and no interval report during the test: whatever the veths counted must come in the
  // records the connections' own packets wrote.
  await hh.start({}, { dataAggregationLevel: 'high', conntrackReportIntervalMs: 600_000 }, [a.ip], { gcIntervalMs: 600_000 });
  await hh.settle(300);
  const sa0 = stats(topo.node, a.veth);
  const sb0 = stats(topo.node, b.veth);
  const n = 10;
  assert.match(await a.ns.node(TCP_SHORT, [String(n), b.ip, '7001', '100', how]), new RegExp(`done ${n}`));
  const da = delta(sa0, stats(topo.node, a.veth));
  const db = delta(sb0, stats(topo.node, b.veth));
  const tcpOf = (flows: readonly PFlow[]): PFlow[] => flows.filter((f) => f.proto === 6);
  const tcp = tcpOf(await hh.until((got) => {
    const p = points(tcpOf(got), a.ip, b.ip);
    return p.fromA.packets >= da.rx_packets && p.toA.packets >= da.tx_packets && p.toB.packets >= db.tx_packets && p.fromB.packets >= db.rx_packets;
  }, scaled(10_000)));
  const p = points(tcp, a.ip, b.ip);
  t.diagnostic(`${[p.fromA, p.toA, p.toB, p.fromB].map((x) => x.records).join('/')} records for ${[p.fromA, p.toA, p.toB, p.fromB].map((x) => x.packets).join('/')} packets at the four points`);
  assertVeths(p, da, db);
  for (const [where, fl] of [['A', atVeth(tcp, a.ip)], ['B', atVeth(tcp, b.ip)]] as const) {
    // Each connection: its first packet, the SYN-ACK, and each direction's held packets at the close
    // (a direction with nothing held since its last record writes none).
    assert.ok(fl.length <= 4 * n && fl.length >= (how === 'fin' ? 4 : 3) * n, `${fl.length} records at ${where}'s veth for ${n} connections`);
    assert.equal(flagCount(fl, 'SYN'), n, `SYNs at ${where}`);
    assert.equal(flagCount(fl, 'SYNACK'), n, `SYN-ACKs at ${where}`);
    if (how === 'fin') assert.equal(flagCount(fl, 'FIN'), 2 * n, `FINs at ${where}`);
    else assert.equal(flagCount(fl, 'RST'), n, `RSTs at ${where}`);
  }
  await hh.call({ op: 'stop' });
});

interface Burst { readonly records: number; readonly packets: number; readonly afterStop: number }

/** A UDP burst from A to B; per observation point (A's veth, B's veth): what came before stop, and the packets the final sweep added. */
async function udpBurst(rate: number, n: number): Promise<Burst[]> {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  await hh.start({}, { dataAggregationLevel: 'high', conntrackReportIntervalMs: 600_000, dataSamplingRate: rate }, [a.ip]);
  await a.ns.node(UDP_SEND, [String(n), b.ip, '7000', '32']);
  // A quiet second and a half: on a busy host (the full suite) the last sampled records have come later
  // than 600 ms after the burst; what this test counts is where each packet is reported, not how soon.
  const flows = await hh.settle(1500);
  await hh.call({ op: 'stop' });
  const final = await hh.flows();
  const fromA = (obs: string) => (f: PFlow): boolean => f.obs === obs && f.src === a.ip && f.proto === 17;
  return ['FROM_ENDPOINT', 'TO_ENDPOINT'].map((obs) => ({ ...total(flows, fromA(obs)), afterStop: total(final, fromA(obs)).packets }));
}

test('sampling: rate 1 reports only the new connection; rate 10 about one packet in ten; stopping reports the rest', async (t) => {
  const n = 2000;
  for (const at of await udpBurst(1, n)) {
    assert.deepEqual([at.records, at.packets], [1, 1], 'only the first packet, reported as new');
    assert.equal(at.packets + at.afterStop, n, 'the final sweep at stop reports what the connection still held');
  }
  for (const at of await udpBurst(10, n)) {
    const sampled = at.records - 1;
    t.diagnostic(`rate 10: ${sampled} sampled records for ${n} packets`);
    assert.ok(sampled >= 130 && sampled <= 270, `about ${n / 10} sampled records, got ${sampled}`);
    assert.ok(at.packets <= n && at.packets > n - 150, `the records carry what accumulated: ${at.packets} of ${n} packets (${at.records} records; the final sweep at stop reported ${at.afterStop} more)`);
    assert.equal(at.packets + at.afterStop, n, 'and the final sweep the rest');
  }
});

test('idle: a connection that goes quiet is reported in full by the sweep, with no packet to carry the report', async (t) => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  const n = 500;
  // Default sweep timing: at high aggregation the sweep runs every conntrackReportInterval (1 s here).
  await hh.start({}, { dataAggregationLevel: 'high', conntrackReportIntervalMs: 1000, enableConntrackMetrics: true }, [a.ip]);
  const t0 = Date.now();
  await a.ns.node(UDP_SEND, [String(n), b.ip, '7000', '32']);
  const got: PFlow[] = [];
  const fromA = (obs: string) => (f: PFlow): boolean => f.obs === obs && f.src === a.ip && f.proto === 17;
  const complete = (): boolean => ['FROM_ENDPOINT', 'TO_ENDPOINT'].every((obs) => total(got, fromA(obs)).packets === n);
  while (!complete() && Date.now() - t0 < 5000) {
    await sleep(100);
    got.push(...(await hh.flows()));
  }
  const ms = Date.now() - t0;
  for (const obs of ['FROM_ENDPOINT', 'TO_ENDPOINT']) {
    const x = total(got, fromA(obs));
    assert.equal(x.packets, n, `${obs}: all ${n} packets reported (${x.records} records)`);
    assert.equal(x.records, 2, `${obs}: the new connection, then one sweep report`);
  }
  t.diagnostic(`the whole burst reported ${ms} ms after it started (report interval 1 s)`);
  assert.ok(ms < 3000, `within about two report intervals (${ms} ms)`);
  const late = got.filter((f) => f.packets > 1);
  assert.ok(late.every((f) => f.reply === false && f.dport === 7000 && f.tsval === 0), 'sweep records carry the direction\'s sender and receiver');
  // conntrack_* gauges, over the live connections: tx = what the initiator (A) sent, at both veths.
  const text = await hh.call<string>({ op: 'metrics' });
  assert.equal(metric(text, 'networkobservability_conntrack_total_connections'), 2, 'both veths still hold the connection: it has not expired');
  const [atA, atB] = [total(got, fromA('FROM_ENDPOINT')), total(got, fromA('TO_ENDPOINT'))];
  assert.equal(metric(text, 'networkobservability_conntrack_packets_tx'), 2 * n);
  assert.equal(metric(text, 'networkobservability_conntrack_bytes_tx'), atA.bytes + atB.bytes);
  assert.equal(metric(text, 'networkobservability_conntrack_packets_rx'), 0);
  assert.equal(metric(text, 'networkobservability_conntrack_bytes_rx'), 0);
  await hh.call({ op: 'stop' });
  assert.deepEqual(await hh.flows(), [], 'nothing was left for the final sweep');
});

test('the connection table: closed connections leave it at their close; what a full table evicts is counted, and every packet still reported', async (t) => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  const max = 1024; // packetParserConntrackMaxEntries' least
  await hh.start({ conntrackMaxEntries: max }, { dataAggregationLevel: 'high', conntrackReportIntervalMs: 600_000, enableConntrackMetrics: true }, [a.ip], { gcIntervalMs: 300 });
  await hh.settle(300);
  const evictions = 'controlplane_networkobservability_conntrack_evictions_total';
  // 300 short connections, two entries each (one per veth): each leaves at its close.
  const conns = 300;
  assert.match(await a.ns.node(TCP_SHORT, [String(conns), b.ip, '7001', '100', 'fin']), new RegExp(`done ${conns}`));
  await hh.settle(800);
  let text = await hh.call<string>({ op: 'metrics' });
  assert.equal(metric(text, 'networkobservability_conntrack_total_connections'), 0, `${conns} closed connections left the table`);
  assert.equal(metric(text, evictions), 0, 'nothing evicted');

  // 700 UDP flows (a source port each), two entries each, live for 60 s: 1 400 inserts into 1 024 entries.
  const flows = 700;
  const sa0 = stats(topo.node, a.veth);
  const sb0 = stats(topo.node, b.veth);
  assert.match(await a.ns.node(UDP_PORTS, [String(flows), b.ip, '7000']), new RegExp(`sent ${flows}`));
  const da = delta(sa0, stats(topo.node, a.veth));
  const db = delta(sb0, stats(topo.node, b.veth));
  const udp = (await hh.settle(800)).filter((f) => f.proto === 17);
  text = await hh.call<string>({ op: 'metrics' });
  const live = metric(text, 'networkobservability_conntrack_total_connections');
  const evicted = metric(text, evictions);
  t.diagnostic(`${2 * flows} inserts into ${max} entries: ${live} live, ${evicted} evicted`);
  assert.ok(live <= max, `live ${live}`);
  assert.equal(evicted, 2 * flows - live, 'every insert is live or counted as evicted');
  assert.ok(evicted >= 2 * flows - max, `evicted ${evicted}`);
  // Each flow's one datagram was reported as new: evictions took entries that held nothing.
  const p = points(udp, a.ip, b.ip);
  assert.deepEqual([p.fromA.packets, p.fromA.bytes], [da.rx_packets, da.rx_bytes], 'from A = rx of its veth');
  assert.deepEqual([p.toB.packets, p.toB.bytes], [db.tx_packets, db.tx_bytes], 'to B = tx of its veth');
  assert.equal(p.fromA.packets, flows);
  assert.equal(metric(text, 'controlplane_networkobservability_lost_events_counter', { type: 'kernel', reason: 'packetparser' }), 0, 'no packet untracked');
  await hh.call({ op: 'stop' });
});

test('start-stop-start-stop and a second stop leave nothing behind', async () => {
  const hh = h as Harness;
  const owned = { progs: [] as number[], links: [] as number[] };
  for (const level of ['high', 'low']) {
    await hh.start({ hostInterfaces: ['pp-ext'] }, { dataAggregationLevel: level }, null);
    const ids = hh.bpf();
    owned.progs.push(...ids.progs);
    owned.links.push(...ids.links);
    await hh.call({ op: 'stop' });
    await hh.call({ op: 'stop' });
  }
  assert.ok(owned.progs.length >= 6, 'two endpoint programs, then four');
  assert.deepEqual(await leftoversAfterStop(topo.node, ['pp-a', 'pp-b', 'pp-ext'], owned), []);
  const logs = await hh.logs();
  assert.deepEqual(logs.filter((l) => l.level === 'error' || l.level === 'warn'), []);
});

test('enablePodLevel false: nothing is loaded, the plugin says why', async () => {
  const before = bpfIdsOf(process.pid);
  const { ctx, got } = fakeContext({ hostInterfaces: [], tcMode: 'auto' as const, conntrackMaxEntries: 65536 }, { enablePodLevel: false });
  const handle = await runPacketparser(ctx);
  assert.deepEqual(got.status, ['degraded: enablePodLevel: nothing wants flows (enablePodLevel, hubble.enabled, hubble.metrics.enabled and the flow-log exporters are off): packetparser has nothing to feed']);
  assert.ok(got.logs.some((l) => l.level === 'warn' && /nothing wants flows \(enablePodLevel, hubble.enabled, hubble.metrics.enabled and the flow-log exporters are off\): packetparser attaches nothing/.test(l.msg)));
  assert.deepEqual(bpfIdsOf(process.pid), before, 'no program or link');
  await handle[Symbol.asyncDispose]();
  await handle[Symbol.asyncDispose]();
});
