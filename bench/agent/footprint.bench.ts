/**
 * What the agent costs a node: wake-ups per second (voluntary context switches summed over every
 * thread, /proc/<pid>/task/<tid>/status), CPU as utime + stime per minute (/proc/<pid>/stat, all
 * threads) and RSS split anonymous / file-backed (RssAnon, RssFile + RssShmem), for
 *   - idle: the default config (default plugins, 10 s interval) in a namespace with no traffic;
 *   - load: the same agent while iperf3 sends 50 000 UDP packets/s (64-byte datagrams) out through
 *     the namespace's default route, where packetforward's tc programs and dns's filter sit;
 *   - podLevel20k: `enablePodLevel` and remote context on the test control plane holding 20 000
 *     RetinaEndpoints, idle once its IP cache has synced;
 *   - podLevel20kDrops: that agent while 50 000 packets/s are dropped (iperf3 UDP into an nftables
 *     DROP rule in a second namespace): each drop is a dropreason ring record, so `lostKernel` (ring
 *     full, lost_events_counter{type="kernel"}) against `dropsPerSecond` says whether the ring is
 *     big enough, and RSS shows the ring's pages once every one is touched.
 * Each window opens 30 s after start-up (and after the sync). With BENCH_FOOTPRINT_BASE=<checkout>
 * that checkout's bin/retina-agent runs too, alternated with this one round by round (ABBA), so
 * before/after come from one run on a shared, noisy machine. Figures are medians over the rounds.
 * Needs root, kernel BTF, iperf3; the pod-level case also the Kubernetes binaries (fails loudly
 * without them; BENCH_FOOTPRINT_PODLEVEL=0 leaves it out).
 * With BENCH_FOOTPRINT_BUNDLE=1 the agent as the image runs it (hack/image: node, bin/retina-agent's node
 * flags, the start-up snapshot build/bundle/<os>-<arch>/retina-agent.blob; `make bundle` first) is a
 * subject, `bundle`, and the bundle's ES entry (retina-agent.mjs) another, `bundleEs`.
 * Env: BENCH_FOOTPRINT_SECONDS (30), BENCH_FOOTPRINT_ROUNDS (2), BENCH_FOOTPRINT_BASE, BENCH_FOOTPRINT_PODLEVEL (1),
 * BENCH_FOOTPRINT_IDLE (1; 0 runs the pod-level part alone), BENCH_FOOTPRINT_BUNDLE (0).
 */
import { cpus, loadavg, release } from 'node:os';
import { performance } from 'node:perf_hooks';
import { NsAgent, metricSum, sleep } from '../../test/ebpf/netns.js';
import { get } from '../../test/e2e/agent-process.js';
import { cpuSeconds, rssSplit, wakeups } from '../../test/e2e/proc-stats.js';
import { Bed, median } from '../datapath/setup.js';
import { envInt } from '../server/summary.js';
import { ENDPOINTS, abba, agentSubjects, endpointsCluster, podLevelAgent } from './subjects.js';

const SECONDS = envInt('BENCH_FOOTPRINT_SECONDS', 30);
const ROUNDS = envInt('BENCH_FOOTPRINT_ROUNDS', 2);
const PPS = 50_000;
/** Start-up's last compilations and collections (V8's memory reducer runs about 25 s in) are over by then. */
const SETTLE_MS = 30_000;
const subjects = agentSubjects('BENCH_FOOTPRINT_BASE', 'BENCH_FOOTPRINT_BUNDLE');

type Drops = Window & { dropsPerSecond: number; lostKernel: number; parsed: number };
type Window = { wakeupsPerSecond: number; cpuSecondsPerMinute: number; cpuPercentOfOneCore: number; rssMB: number; anonMB: number; fileMB: number };

/** Counters around `during` (which must take the window's time), then the RSS. */
async function window(pid: number, during: () => Promise<void> | void): Promise<Window> {
  const w0 = wakeups(pid);
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  await during();
  const wall = (performance.now() - t0) / 1000;
  const cpu = (cpuSeconds(pid) - c0) / wall;
  return {
    wakeupsPerSecond: Number(((wakeups(pid) - w0) / wall).toFixed(1)),
    cpuSecondsPerMinute: Number((cpu * 60).toFixed(3)), cpuPercentOfOneCore: Number((cpu * 100).toFixed(3)), ...rssSplit(pid),
  };
}

/** Medians of each field over the rounds. */
function medians<W extends Window>(ws: readonly W[]): W {
  const keys = Object.keys(ws[0] as W) as (keyof W)[];
  return Object.fromEntries(keys.map((k) => [k, Number(median(ws.map((w) => w[k] as number)).toFixed(3))])) as W;
}

const order = (round: number): string[] => abba(Object.keys(subjects), round);

const results: Record<string, { idle: Window[]; load: Window[]; podLevel20k: Window[]; podLevel20kDrops: Drops[]; sentPps: number[] }> = {};
for (const name of Object.keys(subjects)) results[name] = { idle: [], load: [], podLevel20k: [], podLevel20kDrops: [], sentPps: [] };

/** Ring records lost in the kernel, and records parsed, from the agent's /metrics. */
async function ringCounters(port: number): Promise<{ lost: number; parsed: number }> {
  const text = (await get(port, '/metrics')).body;
  return {
    lost: metricSum(text, 'controlplane_networkobservability_lost_events_counter', { type: 'kernel' }),
    parsed: metricSum(text, 'controlplane_networkobservability_parsed_packets_counter'),
  };
}

if (process.env['BENCH_FOOTPRINT_IDLE'] !== '0') {
  await using bed = new Bed();
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of order(round)) {
      const r = results[name] as (typeof results)[string];
      await using agent = new NsAgent(bed.client, '', subjects[name] as string[]);
      await agent.started(['packetforward', 'dns']);
      await sleep(SETTLE_MS);
      r.idle.push(await window(agent.proc.pid, () => sleep(SECONDS * 1000)));
      let sent = 0;
      r.load.push(await window(agent.proc.pid, () => {
        const out = bed.iperf(['-u', '-l', '64', '-b', String(PPS * 64 * 8), '-t', String(SECONDS)]);
        sent = (out['end'] as { sum: { packets: number } }).sum.packets;
      }));
      r.sentPps.push(Math.round(sent / SECONDS));
    }
  }
}

if (process.env['BENCH_FOOTPRINT_PODLEVEL'] !== '0') {
  await using ep = await endpointsCluster();
  await using bed = new Bed();
  // Every UDP datagram of iperf3's data stream is dropped at the server (its 4-byte stream set-up
  // datagram passes): one dropreason record per packet.
  bed.server.run('nft', ['-f', '-'], 'table inet rtbench {\n  chain in {\n    type filter hook input priority 0;\n    udp dport 5201 udp length > 40 drop;\n  }\n}\n');
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of order(round)) {
      const started = await podLevelAgent(ep.cluster, subjects[name] as string[]);
      await using agent = started.agent;
      const port = started.port;
      await sleep(SETTLE_MS);
      results[name]?.podLevel20k.push(await window(agent.pid, () => sleep(SECONDS * 1000)));
      const c0 = await ringCounters(port);
      let sent = 0;
      const w = await window(agent.pid, () => {
        const out = bed.iperf(['-u', '-l', '64', '-b', String(PPS * 64 * 8), '-t', String(SECONDS)]);
        sent = (out['end'] as { sum: { packets: number } }).sum.packets;
      });
      await sleep(12_000); // a metrics interval: the lost count is read every 10 s
      const c1 = await ringCounters(port);
      results[name]?.podLevel20kDrops.push({ ...w, dropsPerSecond: Math.round(sent / SECONDS), lostKernel: c1.lost - c0.lost, parsed: c1.parsed - c0.parsed });
    }
  }
}

console.log(JSON.stringify({
  name: 'agent/footprint',
  ...Object.fromEntries(Object.entries(results).map(([name, r]) => [name, {
    ...(r.idle.length ? { idle: medians(r.idle), load: { ...medians(r.load), sentPacketsPerSecond: median(r.sentPps) } } : {}),
    ...(r.podLevel20k.length ? { podLevel20k: medians(r.podLevel20k), podLevel20kDrops: { ...medians(r.podLevel20kDrops), lostKernelEachRound: r.podLevel20kDrops.map((d) => d.lostKernel) } } : {}),
  }])),
  goals: { idleCpuPercent: 0.13, loadCpuPercent: 0.2, idleRssMB: 75, podLevel20kRssMB: 100 },
  conditions: {
    seconds: SECONDS, rounds: ROUNDS, order: 'ABBA', subjects, packetsPerSecond: PPS, endpoints: ENDPOINTS,
    kernel: release(), cpus: cpus().length, loadavg1m: Number((loadavg()[0] ?? 0).toFixed(2)),
  },
}));
