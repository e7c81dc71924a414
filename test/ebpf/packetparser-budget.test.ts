/**
 * The CPU budget on a real kernel: a storm of short TCP connections from pod A to pod B (storm.c:
 * thousands a second, about nine packets each, every packet a record at low aggregation) against
 * packetparser with a small cpuBudget. The plugin's process (the harness: decode, then the flows
 * summed, each burning COST_US of CPU as the enricher, the metrics module and Hubble would: the bare
 * harness takes about 0.7 us a record, under any budget at this machine's storm rates) must stay under the budget once the controller has had a few periods, the kernel must have folded
 * records (counted in cpu_budget_records_total, said in a log line), and the flows' packets and bytes
 * must still equal what the veths counted, exactly, at all four observation points.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { cHelper } from './c-helper.js';
import { holdDropsForThisFile } from './drop-lock.js';
import type { FlowSums } from './packetparser-harness.js';
import { Harness, Topology, requirePacketparser, tearDown } from './packetparser-topology.js';
import { metric, sleep, stopAll, type Netns } from './netns.js';
import { cpuSeconds } from '../e2e/proc-stats.js';

holdDropsForThisFile(); // a storm may overflow a queue somewhere: drops other files count exactly

const BUDGET_MILLICORES = 150;
const STORM_SECONDS = 14;
/** CPU per flow downstream of the plugin (real pipelines measured 2-10 us: bench/datapath/README.md). */
const COST_US = 20;
/** Periods (1 s) the controller gets before the CPU is measured: one to engage, a few to settle. */
const WARMUP_MS = 5000;

let topo: Topology;
let h: Harness | undefined;
const helpers: ChildProcess[] = [];

before(async () => {
  requirePacketparser();
  topo = new Topology(248, false); // its own namespaces (pp-node248, ...): no other file uses 248
  const [, b] = [topo.addPod('a', 1), topo.addPod('b', 2)];
  const server = spawn('ip', ['netns', 'exec', b.ns.name, cHelper('bench/datapath/storm.c'), 'server', b.ip, '7200', String(STORM_SECONDS + 60)], { stdio: ['ignore', 'pipe', 'pipe'] });
  helpers.push(server);
  await new Promise((r) => server.stdout?.once('data', r));
  h = new Harness(topo.node);
});

after(() => tearDown(helpers, h, topo));

const POINTS = ['rx_packets', 'rx_bytes', 'tx_packets', 'tx_bytes'] as const;
function counters(ns: Netns, ifname: string): number[] {
  return POINTS.map((s) => ns.ifStat(ifname, s));
}

for (const level of ['low', 'high'] as const) test(`${level}: a storm of short connections: the agent stays under cpuBudget, what the kernel folded is counted, the counts stay exact`, async (t) => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  // high: a 1 s report interval and a sweep every 300 ms, so what closing connections still hold
  // arrives soon after the storm (it would with the defaults too, 15-30 s later).
  await hh.call({
    op: 'start', sums: true, costUs: COST_US,
    config: { hostInterfaces: [], tcMode: 'auto', conntrackMaxEntries: 65536 },
    agent: { dataAggregationLevel: level, cpuBudgetMillicores: BUDGET_MILLICORES, metricsIntervalMs: 1000, conntrackReportIntervalMs: 1000 },
    interest: null, timing: level === 'high' ? { gcIntervalMs: 300 } : {},
  });
  await sleep(1500);
  const a0 = counters(topo.node, a.veth);
  const b0 = counters(topo.node, b.veth);
  const client = spawn('ip', ['netns', 'exec', a.ns.name, cHelper('bench/datapath/storm.c'), 'client', b.ip, '7200', String(STORM_SECONDS), '64'], { stdio: ['ignore', 'pipe', 'pipe'] });
  helpers.push(client);
  let out = '';
  client.stdout?.setEncoding('utf8').on('data', (s: string) => (out += s));
  let running = true;
  const exited = new Promise((r) => client.once('exit', r)).then(() => (running = false));
  // The controller's course, once a second: its limit and the agent's CPU as it measured them.
  const course: string[] = [];
  const watch = (async () => {
    while (running) {
      await sleep(1000);
      const m = await hh.call<string>({ op: 'metrics' });
      course.push(`${metric(m, 'controlplane_networkobservability_cpu_budget_record_limit')}/${metric(m, 'controlplane_networkobservability_cpu_budget_cores', { kind: 'agent' })}`);
    }
  })();
  await sleep(WARMUP_MS);
  const c0 = cpuSeconds(hh.pid);
  const w0 = Date.now();
  await exited;
  await watch;
  t.diagnostic(`record limit per CPU / agent cores, each second: ${course.join(' ')}`);
  const cores = (cpuSeconds(hh.pid) - c0) / ((Date.now() - w0) / 1000);
  const made = Number(/connections (\d+)/.exec(out)?.[1] ?? 0);
  t.diagnostic(`storm: ${out.trim()} (${Math.round(made / STORM_SECONDS)} connections/s); agent ${cores.toFixed(3)} cores over the last ${STORM_SECONDS - WARMUP_MS / 1000} s, budget ${BUDGET_MILLICORES / 1000}`);
  assert.ok(made / STORM_SECONDS > 500, `only ${made} connections in ${STORM_SECONDS} s: not a storm`);

  // Every packet the veths counted, in the flows: folded ones arrive with the next flush (1 s).
  const want = [...counters(topo.node, a.veth).map((x, i) => x - (a0[i] as number)), ...counters(topo.node, b.veth).map((x, i) => x - (b0[i] as number))];
  let got: number[] = [];
  let sums: FlowSums = {};
  for (let i = 0; i < 40; i++) {
    await sleep(500);
    sums = await hh.call<FlowSums>({ op: 'sums' });
    const at = (obs: string, src: string, dst: string): { packets: number; bytes: number } => sums[`${obs} ${src} ${dst}`] ?? { packets: 0, bytes: 0 };
    // The node end of A's veth receives what A sends (FROM_ENDPOINT) and sends what A receives (TO_ENDPOINT).
    const fromA = at('FROM_ENDPOINT', a.ip, b.ip);
    const toA = at('TO_ENDPOINT', b.ip, a.ip);
    const toB = at('TO_ENDPOINT', a.ip, b.ip);
    const fromB = at('FROM_ENDPOINT', b.ip, a.ip);
    got = [fromA.packets, fromA.bytes, toA.packets, toA.bytes, fromB.packets, fromB.bytes, toB.packets, toB.bytes];
    if (got.every((x, j) => x === want[j])) break;
  }
  const records = Object.values(sums).reduce((n, s) => n + s.records, 0);
  const packets = Object.values(sums).reduce((n, s) => n + s.packets, 0);
  const text = await hh.call<string>({ op: 'metrics' });
  const folds = (reason: string): number => metric(text, 'controlplane_networkobservability_folded_records_total', { reason });
  const [budget, pressure, full] = [folds('cpu_budget'), folds('ring_pressure'), folds('aggregate_map_full')];
  const folded = budget + pressure;
  t.diagnostic(`${packets} packets in ${records} records; folded into aggregates: ${budget} over the record limit, ${pressure} for ring pressure; ${full} written for want of room`);
  assert.deepEqual(got, want, 'from A, to A, from B, to B (packets, bytes) = the veths\' rx and tx counters');
  assert.ok(folded > 0, 'the kernel folded records and the agent counted them');
  // The budget, not the storm, set how many records were written: most were folded. (Not a share of the
  // packets: the records the budget lets through are about the same at any storm rate, so on a machine
  // busy enough to slow the storm, 3 800 connections/s in one make test, they were 1 in 12 packets at
  // high aggregation, with 9 folded for each one written.)
  assert.ok(folded > records, `${records} records written, ${folded} folded: the storm was not folded`);
  const logs = await hh.logs();
  assert.ok(logs.some((l) => l.msg.startsWith('cpu budget exceeded')), 'the mode change is logged');
  // The bound is the budget itself, over the 9 s after the warm-up: the controller aims at 80 % of it,
  // and that 20 % covers its lag (the limit follows the load a 1 s period late: single seconds reach
  // about 1.15 x the budget, the course above shows them) and utime/stime's 10 ms ticks (under 1 %
  // of 9 s). Measured here: 0.09-0.11 cores for a 0.15 budget at 7 000-20 000 connections/s.
  assert.ok(cores <= BUDGET_MILLICORES / 1000, `agent ${cores.toFixed(3)} cores, budget ${BUDGET_MILLICORES / 1000}`);
  await stopAll([client]);
  await hh.call({ op: 'stop' });
});

test('a blocked event loop and a 4 KiB ring: with the budget on, what the ring has no room for is folded, not lost', async (t) => {
  const hh = h as Harness;
  const [a, b] = [topo.pod('a'), topo.pod('b')];
  const M = 400;
  await hh.call({
    op: 'start', sums: true,
    config: { hostInterfaces: [], tcMode: 'auto', conntrackMaxEntries: 65536 },
    agent: { dataAggregationLevel: 'low', packetParserRingBufferSize: 4096, metricsIntervalMs: 1000 },
    interest: [a.ip], timing: {},
  });
  await sleep(500);
  const a0 = counters(topo.node, a.veth);
  // The event loop stands still while the datagrams go: the ring (34 records) fills at once.
  await hh.call({ op: 'block', argv: [cHelper('bench/datapath/pktgen.c'), 'send', '1', String(M), '64', b.ip, '7300', a.ns.name] });
  const sent = counters(topo.node, a.veth)[0] as number - (a0[0] as number);
  let got = 0;
  for (let i = 0; i < 40 && got < sent; i++) {
    await sleep(250);
    got = (await hh.call<FlowSums>({ op: 'sums' }))[`FROM_ENDPOINT ${a.ip} ${b.ip}`]?.packets ?? 0;
  }
  const text = await hh.call<string>({ op: 'metrics' });
  const pressure = metric(text, 'controlplane_networkobservability_folded_records_total', { reason: 'ring_pressure' });
  const lost = await hh.call<number>({ op: 'lost' });
  t.diagnostic(`${sent} packets from A; ${got} in the flows; ${pressure} records folded for ring pressure, ${lost} lost`);
  assert.ok(sent >= M * 0.9, `pktgen sent ${sent} of ${M}`);
  assert.equal(got, sent, 'every packet A sent is in the flows');
  assert.ok(pressure > 0, 'folded for ring pressure, and counted');
  assert.equal(lost, 0, 'nothing lost');
  await hh.call({ op: 'stop' });
});
