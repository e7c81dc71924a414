/**
 * The CPU budget under a storm of short connections (issue 38, item 4). Pod A opens short TCP
 * connections to pod B as fast as it can (storm.c: 64 in flight, connect, one byte, close; about
 * nine packets each), through the node namespace where the agent (bin/retina-agent: packetforward on
 * A's veth, packetparser on both veths at low aggregation, every packet a record; the flows go to
 * Hubble's ring and to the static flow-log exporter, one JSON line each, as with flow logs on) runs with the budget off (cpuBudget: 0) and on (BENCH_STORM_BUDGET, 100m),
 * alternated ABBA in one run: first unpaced (as fast as the generator gets CPU: on these shared cores
 * the agent's CPU is taken from the storm's, so the offered rate differs between the modes), then paced
 * at BENCH_STORM_RATE connections/s (the same load for both modes). For each run, one entry: connections per second offered, the agent's
 * CPU (utime + stime, cores) over the whole storm and after its first 3 s (the controller's periods
 * to engage and settle), records parsed, records folded in the kernel (by reason) and lost, and
 * packetforward's forward_count on A's veth against the veth's own counters (kernel maps: exact with
 * the budget on or off), and what packetparser's endpoint programs cost per packet in the kernel
 * (BPF run-time statistics, on for the whole bench: folding adds a hash update per record), and the
 * connections the connection table evicted (conntrack_evictions_total, after its first sweep). Env: BENCH_STORM_SECONDS (10), BENCH_STORM_ROUNDS (2: four runs),
 * BENCH_STORM_BUDGET (100m), BENCH_STORM_CONCURRENCY (64), BENCH_STORM_RATE (1000). Needs root, kernel BTF, clang.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpus, loadavg, release } from 'node:os';
import { cHelper } from '../../test/ebpf/c-helper.js';
import { NsAgent, metric, metricSum, progRunStats, sleep, stopAll } from '../../test/ebpf/netns.js';
import { enableBpfRunStats } from '../../test/ebpf/run-stats.js';
import { holdDrops } from '../../test/ebpf/drop-lock.js';
import { Topology, requirePacketparser } from '../../test/ebpf/packetparser-topology.js';
import { cpuSeconds, median } from './setup.js';
import { output } from './pods.js';

const SECONDS = Number(process.env['BENCH_STORM_SECONDS'] ?? 10);
const ROUNDS = Number(process.env['BENCH_STORM_ROUNDS'] ?? 2);
const BUDGET = process.env['BENCH_STORM_BUDGET'] ?? '100m';
const CONCURRENCY = process.env['BENCH_STORM_CONCURRENCY'] ?? '64';
const RATE = Number(process.env['BENCH_STORM_RATE'] ?? 1000);
const SETTLE_S = 3;
const PORT = '7400';

requirePacketparser();
// A storm can overflow a queue and retransmit SYNs: node-wide counts other runs check exactly (drop-lock.ts).
const releaseDrops = await holdDrops();
const storm = cHelper('bench/datapath/storm.c');
const topo = new Topology(249, false); // namespaces pp-node249, ...: no test uses 249
const [a, b] = [topo.addPod('a', 1), topo.addPod('b', 2)];
const logs = mkdtempSync(join(tmpdir(), 'bench-storm-')); // the flow-log files (at most 40 MB: rotated, one backup)
const server = spawn('ip', ['netns', 'exec', b.ns.name, storm, 'server', b.ip, PORT, String(8 * ROUNDS * (SECONDS + 30))], { stdio: ['ignore', 'pipe', 'pipe'] });

interface Run {
  readonly mode: 'off' | 'on';
  /** Connections/s the generator was held to (0: as fast as it could). */
  readonly pacedAt: number;
  readonly connectionsPerSecond: number;
  readonly agentCores: number;
  readonly agentCoresAfterSettle: number;
  readonly recordsParsed: number;
  readonly folded: { readonly cpuBudget: number; readonly ringPressure: number; readonly aggregateMapFull: number };
  readonly lostEvents: number;
  readonly vethPackets: number;
  readonly forwardCount: number;
  readonly forwardCountExact: boolean;
  readonly loadAverage1m: number;
  /** packetparser's endpoint programs in the kernel during the storm: ns per run (BPF run-time statistics). */
  readonly packetparserNsPerPacket: number;
  /** Connections packetparser's connection table evicted when full (conntrack_evictions_total after the first sweep, 15 s after the start). */
  readonly tableEvictions: number;
}

/** Runs and run time of `pid`'s packetparser endpoint programs so far. */
function endpointRuns(pid: number): { runs: number; ns: number } {
  let runs = 0;
  let ns = 0;
  for (const [name, r] of progRunStats(pid)) {
    if (!name.startsWith('packetparser_en')) continue;
    runs += r.runs;
    ns += r.ns;
  }
  return { runs, ns };
}

const vethPackets = (): number => topo.node.ifStat(a.veth, 'rx_packets') + topo.node.ifStat(a.veth, 'tx_packets');

async function run(mode: 'off' | 'on', pacedAt: number): Promise<Run> {
  const config = [
    'enabledPlugin: [packetforward, packetparser]', `packetForwardInterfaces: [${a.veth}]`, 'enablePodLevel: true',
    'hubble:', '  enabled: true', '  export:', '    static:', '      enabled: true', `      filePath: ${join(logs, 'flows.log')}`, '      fileMaxSizeMb: 20', '      fileMaxBackups: 1',
    'dataAggregationLevel: low', 'packetParserHostInterfaces: []', 'metricsIntervalDuration: 1s', `cpuBudget: ${mode === 'on' ? BUDGET : '0'}`, '',
  ].join('\n');
  await using agent = new NsAgent(topo.node, config);
  await agent.started(['packetforward', 'packetparser']);
  const started = Date.now();
  await sleep(2000);
  const m0 = agent.metrics();
  const v0 = vethPackets();
  const pid = agent.proc.pid;
  const p0 = endpointRuns(pid);
  const c0 = cpuSeconds(pid);
  const t0 = Date.now();
  const client = spawn('ip', ['netns', 'exec', a.ns.name, storm, 'client', b.ip, PORT, String(SECONDS), CONCURRENCY, String(pacedAt)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const done = output(client);
  await sleep(SETTLE_S * 1000);
  const c1 = cpuSeconds(pid);
  const t1 = Date.now();
  const out = await done;
  const c2 = cpuSeconds(pid);
  const t2 = Date.now();
  const p1 = endpointRuns(pid);
  const load = loadavg()[0] ?? 0;
  // The last flush (1 s), packetforward's read (metricsIntervalDuration 1s) and the connection table's
  // first sweep (15 s after the start at low aggregation), which counts its evictions.
  await sleep(Math.max(2500, 16_000 - (Date.now() - started)));
  const m1 = agent.metrics();
  const d = (name: string, labels: Record<string, string> = {}): number => metricSum(m1, name, labels) - metricSum(m0, name, labels);
  const folds = (reason: string): number => metric(m1, 'controlplane_networkobservability_folded_records_total', { reason });
  const veth = vethPackets() - v0;
  const forward = d('networkobservability_forward_count');
  const made = Number(/connections (\d+)/.exec(out)?.[1] ?? 0);
  const wall = Number(/seconds ([\d.]+)/.exec(out)?.[1] ?? SECONDS);
  return {
    mode, pacedAt, connectionsPerSecond: Math.round(made / wall),
    agentCores: round((c2 - c0) / ((t2 - t0) / 1000)), agentCoresAfterSettle: round((c2 - c1) / ((t2 - t1) / 1000)),
    recordsParsed: d('controlplane_networkobservability_parsed_packets_counter'),
    folded: { cpuBudget: folds('cpu_budget'), ringPressure: folds('ring_pressure'), aggregateMapFull: folds('aggregate_map_full') },
    lostEvents: d('controlplane_networkobservability_lost_events_counter'),
    vethPackets: veth, forwardCount: forward, forwardCountExact: forward === veth, loadAverage1m: round(load),
    packetparserNsPerPacket: Math.round((p1.ns - p0.ns) / Math.max(1, p1.runs - p0.runs)),
    tableEvictions: metric(m1, 'controlplane_networkobservability_conntrack_evictions_total'),
  };
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

// BPF run-time statistics for the whole bench (two clock reads per program run, in both modes alike).
const stats = enableBpfRunStats();
try {
  await new Promise((r) => server.stdout?.once('data', r));
  const runs: Run[] = [];
  for (const pacedAt of [0, RATE]) {
    for (let i = 0; i < ROUNDS; i++) {
      for (const mode of i % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) runs.push(await run(mode, pacedAt));
    }
  }
  const of = (mode: 'off' | 'on', pacedAt: number, f: (r: Run) => number): number => round(median(runs.filter((r) => r.mode === mode && r.pacedAt === pacedAt).map(f)));
  const medians = (pacedAt: number): Record<string, unknown> => Object.fromEntries((['off', 'on'] as const).map((m) => [m, {
    connectionsPerSecond: of(m, pacedAt, (r) => r.connectionsPerSecond), agentCores: of(m, pacedAt, (r) => r.agentCores), agentCoresAfterSettle: of(m, pacedAt, (r) => r.agentCoresAfterSettle),
    recordsParsed: of(m, pacedAt, (r) => r.recordsParsed), folded: of(m, pacedAt, (r) => r.folded.cpuBudget + r.folded.ringPressure),
    packetparserNsPerPacket: of(m, pacedAt, (r) => r.packetparserNsPerPacket),
  }]));
  console.log(JSON.stringify({
    name: 'datapath/storm',
    fixture: `short TCP connections pod A -> pod B (storm.c, ${CONCURRENCY} in flight, ${SECONDS} s a run), packetparser low aggregation on both veths, Hubble ring and static flow-log export, cpuBudget 0 vs ${BUDGET}, ABBA x${ROUNDS}, unpaced then paced at ${RATE}/s`,
    conditions: { kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model },
    budgetCores: Number(BUDGET.endsWith('m') ? Number(BUDGET.slice(0, -1)) / 1000 : BUDGET),
    medianUnpaced: medians(0),
    [`medianPacedAt${RATE}`]: medians(RATE),
    forwardCountExactInEveryRun: runs.every((r) => r.forwardCountExact),
    tableEvictionsMax: Math.max(...runs.map((r) => r.tableEvictions)),
    runs,
  }));
} finally {
  stats[Symbol.dispose]();
  await stopAll([server]);
  topo.destroy();
  rmSync(logs, { recursive: true, force: true });
  releaseDrops();
}
