/**
 * The pod-level pipeline with 0, 1 and 2 worker threads (pipelineWorkers): flows/s through
 * decode → enrich → count of packetparser records (fixture.ts, remote context, Retina's annotation
 * set: the heaviest combination of enrich-aggregate.bench.ts), rounds alternated 0,1,2,2,1,0 in one
 * process. With workers, the main thread copies the records into the hand-off (workers.ts) in
 * drains of 4096, as packetparser's ring drain does, keeps every worker's hand-off from filling
 * (nothing is lost), and a round ends when the workers' counts of every record handed over are
 * merged into the main thread's families: the rate includes the hand-over and the merge. Also
 * printed: the main thread's own time per record (what the ring drain pays besides its libbpf
 * callback) and the merge's cost. Each round checks that the workers counted every record handed
 * over (the bench fails otherwise); unit tests compare the counts themselves (workers.test.ts).
 * Env: BENCH_ROUNDS (3), BENCH_ROUND_MS (1500), BENCH_WORKERS ("0,1,2").
 */
import { availableParallelism, cpus, loadavg } from 'node:os';
import { cacheLookup, createEnricher } from '../../src/enricher/index.js';
import type { Flow, RawRecordSink } from '../../src/flow/index.js';
import { silentLogger } from '../../src/log/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import { annotationSpec, createMetricsModule, type MetricsModule } from '../../src/metrics/module/index.js';
import { startPipelineWorkers, type PipelineWorkers } from '../../src/pipeline/workers.js';
import { createPacketDecoder, PACKET_EVENT_SIZE } from '../../src/plugins/linux/packetparser/decode.js';
import { RAW_DECODER_MODULE } from '../../src/plugins/linux/packetparser/raw-decoder.js';
import { kernelClock } from '../../src/plugins/linux/ebpf-shared/clock.js';
import { DEFAULT_HANDOFF, SLOT_HEADER } from '../../src/pipeline/handoff.js';
import { buildFixture, THIS_NODE, type Rec } from './fixture.js';

const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const ROUNDS = envNum('BENCH_ROUNDS', 3);
const ROUND_MS = envNum('BENCH_ROUND_MS', 1500);
const MODES = (process.env['BENCH_WORKERS'] ?? '0,1,2').split(',').map(Number);
const DRAIN = 4096;
const BATCH = 256;
const OFFSET_MS = 1.7e12;

const fx = buildFixture({ nodes: 10, pods: 1000, services: 50, connections: 3000, records: 64 * 1024, forwardShare: 1, localOnly: false });
const offsets = fx.schedule.flatMap((r: Rec) => (r.kind === 'pp' ? [r.off] : []));
const spec = annotationSpec(Array.from({ length: 20 }, (_, i) => `ns-${i}`));

interface Mode {
  readonly workers: number;
  readonly metrics: MetricsRegistry;
  readonly module: MetricsModule;
  readonly step: (i: number) => number;
  readonly pool: PipelineWorkers | undefined;
  readonly sink: RawRecordSink | undefined;
  readonly samples: number[];
  readonly mainNsPerRecord: number[];
  records: number;
}

function moduleOf(): { metrics: MetricsRegistry; module: MetricsModule } {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const module = createMetricsModule({ metrics, remoteContext: true, nodeName: THIS_NODE });
  module.apply(spec);
  return { metrics, module };
}

function inThread(): Mode {
  const { metrics, module } = moduleOf();
  const decode = createPacketDecoder({ clock: kernelClock(OFFSET_MS), nodeName: '' });
  const enrich = createEnricher(cacheLookup(fx.cache), module);
  const m: Mode = { workers: 0, metrics, module, pool: undefined, sink: undefined, samples: [], mainNsPerRecord: [], records: 0, step: (i) => {
    const flows: Flow[] = [];
    const at = (i * BATCH) % offsets.length;
    for (let k = 0; k < BATCH; k++) flows.push(decode(fx.pp, offsets[(at + k) % offsets.length] as number, PACKET_EVENT_SIZE));
    enrich.consume({ source: 'bench', flows });
    return BATCH;
  } };
  return m;
}

function withWorkers(n: number): Mode {
  const { metrics, module } = moduleOf();
  const pool = startPipelineWorkers({
    workers: n, module, cache: fx.cache, remoteContext: true, nodeName: THIS_NODE, metrics, log: silentLogger,
    onThread: { consume: () => undefined }, wantsFlows: () => false, flushMs: 1000,
  });
  const sink = pool.openRaw({ source: 'packetparser', module: RAW_DECODER_MODULE, options: {} });
  sink.param = OFFSET_MS;
  return { workers: n, metrics, module, pool, sink, samples: [], mainNsPerRecord: [], records: 0, step: (i) => {
    const at = (i * DRAIN) % offsets.length;
    for (let k = 0; k < DRAIN; k++) sink.push(fx.pp, offsets[(at + k) % offsets.length] as number, PACKET_EVENT_SIZE);
    sink.flush();
    return DRAIN;
  } };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const modes = MODES.map((n) => (n === 0 ? inThread() : withWorkers(n)));
await sleep(300); // workers started, decoder modules loaded
let cursor = 0;

async function round(m: Mode, ms: number, keep = true): Promise<void> {
  globalThis.gc?.();
  const t0 = performance.now();
  const end = t0 + ms;
  let records = 0;
  let mainMs = 0;
  if (!m.pool) {
    while (performance.now() < end) for (let k = 0; k < 20; k++) records += m.step(cursor++);
    mainMs = performance.now() - t0;
  } else {
    const pool = m.pool;
    const counted0 = pool.stats().counted;
    const slotsPerDrain = Math.ceil((DRAIN * (PACKET_EVENT_SIZE + 4)) / (DEFAULT_HANDOFF.slotBytes - SLOT_HEADER)) + 1;
    const roomy = (): boolean => pool.stats().workers > 0 && backlogRoom(pool) >= slotsPerDrain;
    while (performance.now() < end) {
      if (!roomy()) {
        await new Promise((r) => setImmediate(r)); // the drain would find no room: wait for the workers (nothing lost)
        continue;
      }
      const t = performance.now();
      records += m.step(cursor++);
      mainMs += performance.now() - t;
    }
    await pool.flushNow(30_000);
    if (pool.stats().counted - counted0 !== records) throw new Error(`${m.workers} workers: ${records} handed, ${pool.stats().counted - counted0} counted`);
  }
  const s = (performance.now() - t0) / 1000;
  if (!keep) return;
  m.samples.push(records / s);
  m.mainNsPerRecord.push((mainMs * 1e6) / records);
  m.records += records;
}

/** Free slots of the worker with the most room (the sink publishes to the least backlogged). */
function backlogRoom(pool: PipelineWorkers): number {
  return Math.max(...pool.backlogs().map((b) => DEFAULT_HANDOFF.slots - b));
}

for (const m of modes) await round(m, 300, false); // warm-up
const order = [...modes, ...[...modes].reverse()];
const loads: number[] = [];
for (let r = 0; r < ROUNDS; r++) for (const m of order) {
  await round(m, ROUND_MS);
  loads.push(loadavg()[0] as number);
}

async function expose(m: MetricsRegistry): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const l of (await m.expose()).body.split('\n')) {
    if (!l.startsWith('networkobservability_adv_')) continue;
    const i = l.lastIndexOf(' ');
    out.set(l.slice(0, i), Number(l.slice(i + 1)));
  }
  return out;
}
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const results: { workers: number; flowsPerSec: number; mainThreadNsPerRecord: number; [k: string]: unknown }[] = [];
for (const m of modes) {
  const st = m.pool?.stats();
  results.push({
    workers: m.workers, flowsPerSec: Math.round(median(m.samples)), rounds: m.samples.map(Math.round),
    mainThreadNsPerRecord: +median(m.mainNsPerRecord).toFixed(1), records: m.records,
    series: (await expose(m.metrics)).size,
    ...(st ? { lost: st.lostBacklog + st.lostExit, merges: st.merges, seriesMerged: st.seriesMerged, mergeMsTotal: +st.mergeMs.toFixed(1), mergeNsPerSeries: +((st.mergeMs * 1e6) / Math.max(1, st.seriesMerged)).toFixed(0) } : {}),
  });
}
await Promise.all(modes.map((m) => m.pool?.[Symbol.asyncDispose]()));
const rate = (n: number): number | undefined => results.find((r) => r.workers === n)?.flowsPerSec;
const one = rate(1), two = rate(2), zero = rate(0);
for (const r of results) process.stderr.write(`${String(r.workers).padStart(2)} workers  ${(r.flowsPerSec / 1e6).toFixed(2)} M flows/s  main thread ${r.mainThreadNsPerRecord} ns/record\n`);
console.log(JSON.stringify({
  bench: 'pipeline/workers', fixture: 'packetparser records, remote context, annotation set (8 metrics)', cores: availableParallelism(), cpu: cpus()[0]?.model, node: process.version,
  rounds: ROUNDS, roundMs: ROUND_MS, drain: DRAIN, loadavg1m: { min: Math.min(...loads), max: Math.max(...loads) },
  results,
  twoToOne: one && two ? +(two / one).toFixed(2) : undefined, oneToZero: one && zero ? +(one / zero).toFixed(2) : undefined, twoToZero: two && zero ? +(two / zero).toFixed(2) : undefined,
  goalTwoToOne: 1.7,
}));
