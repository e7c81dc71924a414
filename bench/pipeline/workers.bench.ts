/**
 * The pod-level pipeline with 0, 1 and 2 worker threads (pipelineWorkers): flows/s through
 * decode → enrich → count of packetparser records (workers-setup.ts), rounds alternated
 * 0,1,2,2,1,0 in one process. With workers, the main thread copies the records into the hand-off in
 * drains of 4096, as packetparser's ring drain does, and hands a drain over only when a worker has room
 * for all of it (nothing is lost): as in the agent, whose drain never waits, a run's partitions whose
 * worker is full go to another (raw-sink.ts), so the workers share the load as the cores let them; an
 * "s" in a mode waits instead until every worker has room (the slowest worker then sets the pace: the
 * rule before 2026-11-30 evening, bench/pipeline/README.md). A round ends when the workers' counts of every record handed over are merged
 * into the main thread's families, so the rate includes the hand-over and the merge. Also printed:
 * the main thread's own time per record (what the ring drain pays besides its libbpf callback), the
 * merge's cost per series, and the memory the workers added. Each round checks that the workers
 * counted every record handed over (the bench fails otherwise); test/pipeline/workers.test.ts
 * compares the counts themselves with the main thread's.
 * Two hand-offs side by side: ring runs (the records laid out as the ring holds them, pushed as the
 * JavaScript ring walk pushes them: adjacent records copied whole to every worker, each worker
 * counting its partitions' records) and, in the modes marked "c", one copy per record to its worker.
 * A "u" in a mode: records not routed by their peers (a run or slot to one worker in turn: every worker
 * holds every series).
 * An "i" in a mode: that many independent copies of the whole in-thread pipeline, each in a worker thread
 * of its own with its own tables and records (independent-worker.ts), nothing shared and no main thread
 * in the path: "2i" / "1i" is what this machine gives the same work on two cores against one, the
 * ceiling of any way of splitting it (printed as twoToOneIndependent beside twoToOne; the "Paired"
 * figures are the median of each round's ratio to the round of the other mode in the same pass).
 * Env: BENCH_ROUNDS (3), BENCH_ROUND_MS (1500), BENCH_WORKERS ("0,1,2,1c,2c,1i,2i").
 */
import { availableParallelism, cpus, loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import { createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import type { PipelineWorkers } from '../../src/pipeline/workers.js';
import { advSeries, handoffRoom, inThreadPipeline, median, mostRoom, slotsFor, workersPipeline } from './workers-setup.js';

const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const ROUNDS = envNum('BENCH_ROUNDS', 3);
const ROUND_MS = envNum('BENCH_ROUND_MS', 1500);
const MODES = (process.env['BENCH_WORKERS'] ?? '0,1,2,1c,2c,1i,2i').split(',').map((m) => ({
  workers: parseInt(m, 10), copy: m.includes('c') ? 'records' as const : 'ring' as const, partitioned: !m.includes('u'), independent: m.includes('i'), strict: m.includes('s'),
}));
const DRAIN = 4096;
const BATCH = 256;

interface Mode {
  readonly workers: number;
  readonly copy: string;
  readonly metrics: MetricsRegistry;
  readonly handle: (at: number, n: number) => void;
  readonly pool: PipelineWorkers | undefined;
  /** Independent copies of the in-thread pipeline, one per worker thread ("i" modes). */
  readonly copies: Worker[] | undefined;
  /** The drain waits until every worker has room for it ("s"), not only until one has. */
  readonly strict: boolean;
  readonly samples: number[];
  readonly mainNsPerRecord: number[];
  /** The process's CPU time (every thread) per record, and its CPU time over wall time. */
  readonly cpuNsPerRecord: number[];
  readonly cores: number[];
  /** CPU time per record of the main thread alone, and of the worker threads. */
  readonly mainCpuNs: number[];
  readonly workerCpuNs: number[];
  records: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
globalThis.gc?.();
const rss0 = process.memoryUsage().rss;
interface CopyResult { records: number; cpuMs: number; wallMs: number }
const startCopy = (): Promise<Worker> => new Promise((res, rej) => {
  const w = new Worker(new URL('./independent-worker.js', import.meta.url));
  w.once('message', () => res(w));
  w.once('error', rej);
});
const modes: Mode[] = MODES.map(({ workers: n, copy, partitioned, independent, strict }) => {
  const common = { workers: n, strict, samples: [], mainNsPerRecord: [], cpuNsPerRecord: [], cores: [], mainCpuNs: [], workerCpuNs: [], records: 0 };
  // The copies are started after the memory of the other modes' workers is taken (below).
  if (independent) return { ...common, copy: 'independent', metrics: createMetricsRegistry({ processMetrics: false }), handle: () => undefined, pool: undefined, copies: [] };
  const p = n === 0 ? { ...inThreadPipeline(), pool: undefined } : workersPipeline(n, partitioned, copy);
  return { ...common, copy: `${copy}${partitioned ? '' : ', unpartitioned'}${strict ? ', strict' : ''}`, metrics: p.metrics, handle: p.handle, pool: p.pool, copies: undefined };
});
await sleep(300); // workers started, decoder modules loaded

/** One round of the independent copies, started together (the main thread waits, idle). */
async function copiesRound(m: Mode, ms: number, keep: boolean): Promise<void> {
  const copies = m.copies ?? [];
  const start = performance.timeOrigin + performance.now() + 20;
  const got = await Promise.all(copies.map((w) => new Promise<CopyResult>((res) => {
    w.once('message', res);
    w.postMessage({ ms, start });
  })));
  if (!keep) return;
  const records = got.reduce((a, r) => a + r.records, 0);
  const cpuMs = got.reduce((a, r) => a + r.cpuMs, 0);
  const wallS = Math.max(...got.map((r) => r.wallMs)) / 1000;
  m.samples.push(records / wallS);
  m.workerCpuNs.push((cpuMs * 1e6) / records);
  m.cpuNsPerRecord.push((cpuMs * 1e6) / records);
  m.cores.push(cpuMs / 1000 / wallS);
  m.mainCpuNs.push(0);
  m.mainNsPerRecord.push(0);
  m.records += records;
}
let cursor = 0;

async function round(m: Mode, ms: number, keep = true): Promise<void> {
  globalThis.gc?.();
  if (m.copies) return copiesRound(m, ms, keep);
  const cpu0 = process.cpuUsage();
  const main0 = process.threadCpuUsage();
  const workerCpu0 = m.pool?.stats().workerCpuMs ?? 0;
  const t0 = performance.now();
  const end = t0 + ms;
  let records = 0;
  let mainMs = 0;
  const pool = m.pool;
  if (!pool) {
    while (performance.now() < end) {
      for (let k = 0; k < 20; k++) m.handle((cursor += BATCH), BATCH);
      records += 20 * BATCH;
    }
    mainMs = performance.now() - t0;
  } else {
    const counted0 = pool.stats().counted;
    const lost0 = pool.stats().lostBacklog;
    while (performance.now() < end) {
      if ((m.strict ? handoffRoom(pool) : mostRoom(pool)) < slotsFor(DRAIN)) {
        await sleep(1); // the drain would find no room: wait for the workers (nothing lost), without taking a core from them
        continue;
      }
      const t = performance.now();
      m.handle((cursor += DRAIN), DRAIN);
      mainMs += performance.now() - t;
      records += DRAIN;
    }
    await pool.flushNow(60_000);
    const st = pool.stats();
    if (st.counted - counted0 !== records || st.lostBacklog !== lost0) throw new Error(`${m.workers} workers (${m.copy}): ${records} handed, ${st.counted - counted0} counted, ${st.lostBacklog - lost0} refused`);
  }
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuS = (cpu.user + cpu.system) / 1e6;
  const main = process.threadCpuUsage(main0);
  if (!keep) return;
  m.mainCpuNs.push(((main.user + main.system) * 1000) / records);
  m.workerCpuNs.push((((m.pool?.stats().workerCpuMs ?? 0) - workerCpu0) * 1e6) / records);
  m.cpuNsPerRecord.push((cpuS * 1e9) / records);
  m.cores.push(cpuS / s);
  m.samples.push(records / s);
  m.mainNsPerRecord.push((mainMs * 1e6) / records);
  m.records += records;
}

for (const m of modes) if (!m.copies) await round(m, 300, false); // warm-up: every connection seen
globalThis.gc?.();
const rssWarm = process.memoryUsage().rss;
for (const m of modes) if (m.copies) {
  m.copies.push(...await Promise.all(Array.from({ length: m.workers }, startCopy)));
  await round(m, 300, false);
}
const order = [...modes, ...[...modes].reverse()];
const loads: number[] = [];
for (let r = 0; r < ROUNDS; r++) for (const m of order) {
  await round(m, ROUND_MS);
  loads.push(loadavg()[0] as number);
}

const results: { workers: number; copy: string; flowsPerSec: number; mainThreadNsPerRecord: number; [k: string]: unknown }[] = [];
for (const m of modes) {
  const st = m.pool?.stats();
  results.push({
    workers: m.workers, copy: m.workers ? m.copy : 'none', flowsPerSec: Math.round(median(m.samples)), rounds: m.samples.map(Math.round),
    mainThreadNsPerRecord: +median(m.mainNsPerRecord).toFixed(1), cpuNsPerRecord: Math.round(median(m.cpuNsPerRecord)), coresUsed: +median(m.cores).toFixed(2),
    mainThreadCpuNsPerRecord: Math.round(median(m.mainCpuNs)), workerThreadsCpuNsPerRecord: Math.round(median(m.workerCpuNs)), records: m.records, series: m.copies ? undefined : await advSeries(m.metrics),
    ...(st ? { perWorker: st.perWorker, lost: st.lostBacklog + st.lostExit, merges: st.merges, seriesMerged: st.seriesMerged, mergeMsTotal: +st.mergeMs.toFixed(1), mergeNsPerSeries: Math.round((st.mergeMs * 1e6) / Math.max(1, st.seriesMerged)) } : {}),
  });
}
await Promise.all(modes.map((m) => m.pool?.[Symbol.asyncDispose]()));
await Promise.all(modes.flatMap((m) => m.copies ?? []).map((w) => w.terminate()));
const rate = (n: number, copy = 'ring'): number | undefined => results.find((r) => r.workers === n && (n === 0 || r.copy === copy))?.flowsPerSec;
const [zero, one, two] = [rate(0), rate(1), rate(2)];
const [oneRec, twoRec] = [rate(1, 'records'), rate(2, 'records')];
const [oneInd, twoInd] = [rate(1, 'independent'), rate(2, 'independent')];
const twoStrict = rate(2, 'ring, strict');
const ratio = (a: number | undefined, b: number | undefined): number | undefined => (a && b ? +(a / b).toFixed(2) : undefined);
/**
 * The median of the rounds' own ratios: sample i of one mode against sample i of the other, run in the
 * same pass of the alternation (this machine's speed moves within a minute; a pair is seconds apart).
 */
const paired = (n: number, copy: string, d: number, dcopy: string): number | undefined => {
  const of = (w: number, c: string): number[] | undefined => modes.find((m) => m.workers === w && (w === 0 || m.copy === c))?.samples;
  const [a, b] = [of(n, copy), of(d, dcopy)];
  return a && b && a.length === b.length ? +median(a.map((x, i) => x / (b[i] as number))).toFixed(2) : undefined;
};
const workerThreads = MODES.reduce((a, m) => a + (m.independent ? 0 : m.workers), 0);
// What each mode would carry on free cores, from its CPU per record (derived, not measured: on a
// shared machine the cores a process gets vary; the measured rates above are the figures).
for (const r of results) {
  const mainNs = r['mainThreadCpuNsPerRecord'] as number;
  const workerNs = r['workerThreadsCpuNsPerRecord'] as number;
  r['onFreeCoresFlowsPerSec'] = r.workers === 0 ? Math.round(1e9 / mainNs) : Math.round(Math.min(1e9 / mainNs, (r.workers * 1e9) / Math.max(1, workerNs)));
}
for (const r of results) process.stderr.write(`${String(r.workers).padStart(2)} workers ${r.copy.padEnd(7)}  ${(r.flowsPerSec / 1e6).toFixed(2)} M flows/s  main thread ${r.mainThreadNsPerRecord} ns/record  CPU ${String(r['cpuNsPerRecord'])} ns/record on ${String(r['coresUsed'])} cores\n`);
console.log(JSON.stringify({
  bench: 'pipeline/workers', fixture: 'packetparser records, remote context, annotation set (8 metrics)', cores: availableParallelism(), cpu: cpus()[0]?.model, node: process.version,
  rounds: ROUNDS, roundMs: ROUND_MS, drain: DRAIN, loadavg1m: { min: Math.min(...loads), max: Math.max(...loads) },
  results, twoToOne: ratio(two, one), twoToOnePaired: paired(2, 'ring', 1, 'ring'), twoToOneStrict: ratio(twoStrict, one), twoToOneStrictPaired: paired(2, 'ring, strict', 1, 'ring'), twoToOneRecordsCopied: ratio(twoRec, oneRec),
  twoToOneIndependent: ratio(twoInd, oneInd), twoToOneIndependentPaired: paired(2, 'independent', 1, 'independent'), oneToZero: ratio(one, zero), twoToZero: ratio(two, zero), goalTwoToOne: 1.7,
  rssMBPerWorkerWarm: workerThreads ? +((rssWarm - rss0) / 1048576 / workerThreads).toFixed(1) : undefined,
}));
