/**
 * What the pipeline-worker benchmarks share: packetparser records of fixture.ts (remote context,
 * Retina's annotation set, the heaviest combination of enrich-aggregate.bench.ts), the main
 * thread's own pipeline (decode → enrich → count) and a pool of workers with a packetparser sink.
 */
import { cacheLookup, createEnricher } from '../../src/enricher/index.js';
import type { Flow, RawRecordSink } from '../../src/flow/index.js';
import { silentLogger } from '../../src/log/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import { annotationSpec, createMetricsModule, type MetricsModule } from '../../src/metrics/module/index.js';
import { DEFAULT_HANDOFF, SLOT_HEADER } from '../../src/pipeline/handoff.js';
import { startPipelineWorkers, type PipelineWorkers } from '../../src/pipeline/workers.js';
import { kernelClock } from '../../src/plugins/linux/ebpf-shared/clock.js';
import { createPacketDecoder, PACKET_EVENT_SIZE } from '../../src/plugins/linux/packetparser/decode.js';
import { RAW_DECODER_MODULE, RAW_PARTITION_KEY } from '../../src/plugins/linux/packetparser/raw-decoder.js';
import { buildFixture, THIS_NODE, type Rec } from './fixture.js';

export const OFFSET_MS = 1.7e12;
export const fx = buildFixture({ nodes: 10, pods: 1000, services: 50, connections: 3000, records: 64 * 1024, forwardShare: 1, localOnly: false });
export const offsets = fx.schedule.flatMap((r: Rec) => (r.kind === 'pp' ? [r.off] : []));
/** The same records laid out as a BPF ring buffer holds them: [u32 len][u32 page offset][record], 128 bytes each. */
const RING_RECORD = 8 + ((PACKET_EVENT_SIZE + 7) & ~7);
export const ring = ((): DataView => {
  const v = new DataView(new ArrayBuffer(offsets.length * RING_RECORD));
  const src = new Uint8Array(fx.pp.buffer, fx.pp.byteOffset, fx.pp.byteLength);
  offsets.forEach((off, k) => {
    v.setUint32(k * RING_RECORD, PACKET_EVENT_SIZE, true);
    new Uint8Array(v.buffer).set(src.subarray(off, off + PACKET_EVENT_SIZE), k * RING_RECORD + 8);
  });
  return v;
})();
/** How often the JavaScript ring walk gives space back (ring-buffer.ts: PUBLISH_EVERY), when a sink copies its runs. */
const RELEASE_EVERY = 64;
const spec = annotationSpec(Array.from({ length: 20 }, (_, i) => `ns-${i}`));

export function moduleOf(): { metrics: MetricsRegistry; module: MetricsModule } {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const module = createMetricsModule({ metrics, remoteContext: true, nodeName: THIS_NODE });
  module.apply(spec);
  return { metrics, module };
}

/** The main thread's pipeline: handles `n` records from `at` (cycling through the fixture). */
export function inThreadPipeline(): { metrics: MetricsRegistry; handle: (at: number, n: number) => void } {
  const { metrics, module } = moduleOf();
  const decode = createPacketDecoder({ clock: kernelClock(OFFSET_MS), nodeName: '' });
  const enrich = createEnricher(cacheLookup(fx.cache), module);
  return { metrics, handle: (at, n) => {
    const flows: Flow[] = [];
    for (let k = 0; k < n; k++) flows.push(decode(fx.pp, offsets[(at + k) % offsets.length] as number, PACKET_EVENT_SIZE));
    enrich.consume({ source: 'bench', flows });
  } };
}

export interface WorkersMode {
  readonly metrics: MetricsRegistry;
  readonly pool: PipelineWorkers;
  readonly sink: RawRecordSink;
  /** Copies `n` records from `at` into the hand-off, then flushes (one drain). */
  readonly handle: (at: number, n: number) => void;
}

/**
 * `copy`: 'ring' pushes the records as the JavaScript ring walk does (pushRing over the ring layout,
 * its runs copied whole to every worker at each release of space); 'records': one copy per record to
 * its worker (push), as with libbpf's walk.
 */
export function workersPipeline(workers: number, partitioned = true, copy: 'ring' | 'records' = 'ring'): WorkersMode {
  const { metrics, module } = moduleOf();
  const pool = startPipelineWorkers({
    workers, module, cache: fx.cache, remoteContext: true, nodeName: THIS_NODE, metrics, log: silentLogger,
    onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: { consume: () => undefined }, flushMs: 1000,
  });
  const sink = pool.openRaw({ source: 'packetparser', module: RAW_DECODER_MODULE, options: {}, ...(partitioned ? { partitionKey: RAW_PARTITION_KEY } : {}) });
  sink.param = OFFSET_MS;
  if (copy === 'records') {
    return { metrics, pool, sink, handle: (at, n) => {
      for (let k = 0; k < n; k++) sink.push(fx.pp, offsets[(at + k) % offsets.length] as number, PACKET_EVENT_SIZE);
      sink.flush();
    } };
  }
  return { metrics, pool, sink, handle: (at, n) => {
    for (let k = 0; k < n; k++) {
      sink.pushRing(ring, ((at + k) % offsets.length) * RING_RECORD + 8, PACKET_EVENT_SIZE);
      if ((k + 1) % RELEASE_EVERY === 0) sink.copyRun();
    }
    sink.flush();
  } };
}

/** Hand-off slots a drain of `n` packetparser records takes. */
export const slotsFor = (n: number): number => Math.ceil((n * RING_RECORD) / (DEFAULT_HANDOFF.slotBytes - SLOT_HEADER)) + 2;

/** Free slots of the worker with the least room (records are routed by their peers: each worker gets part of every drain). */
export const handoffRoom = (pool: PipelineWorkers): number => Math.min(...pool.backlogs().map((b) => DEFAULT_HANDOFF.slots - b));
/** Free slots of the worker with the most room (a full worker's partitions go to another: raw-sink.ts). */
export const mostRoom = (pool: PipelineWorkers): number => Math.max(...pool.backlogs().map((b) => DEFAULT_HANDOFF.slots - b));

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

export async function advSeries(m: MetricsRegistry): Promise<number> {
  return (await m.expose()).body.split('\n').filter((l) => l.startsWith('networkobservability_adv_')).length;
}
