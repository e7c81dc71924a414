/**
 * A pipeline worker (worker_threads; started by workers.ts): reads raw records from its hand-off
 * ring, decodes them with each source's decoder module, enriches them from its mirror of the IP
 * cache and counts them in a Metrics Module of its own; every `flushMs` (and when asked) it hands
 * the counts since the last hand-over to the main thread, which adds them to the families
 * /metrics serves. Messages in: source, cache, spec, flush, stop. Out: deltas (with the records
 * counted so far), stopped.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { IpCache, applyIpCacheChange, type IpCacheChange } from '../cache/index.js';
import { cacheLookup, createEnricher } from '../enricher/index.js';
import type { Flow, PartitionKey, RawDecoder, RawDecoderModule } from '../flow/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import { createMetricsModule, type FamilyDeltas, type MetricsSpec } from '../metrics/module/index.js';
import { HandoffReader, type HandoffShape } from './handoff.js';

export interface WorkerInit {
  readonly sab: SharedArrayBuffer;
  readonly shape: HandoffShape;
  readonly remoteContext: boolean;
  readonly nodeName: string;
  readonly enrich: boolean;
  readonly flushMs: number;
  readonly maxSeriesPerMetric?: number;
  /** The main thread's module's pod labels (metricsPodLabelsAllowlist): the same label names. */
  readonly podLabels: readonly { readonly key: string; readonly name: string }[];
}

export type ToWorker =
  | { readonly t: 'source'; readonly id: number; readonly source: string; readonly module: string; readonly options: unknown; readonly key?: PartitionKey }
  | { readonly t: 'cache'; readonly changes: readonly IpCacheChange[] }
  | { readonly t: 'spec'; readonly spec: MetricsSpec | undefined; readonly generation: number }
  | { readonly t: 'flush'; readonly seq: number }
  | { readonly t: 'stop' };

export type FromWorker =
  | {
    readonly t: 'deltas'; readonly generation: number; readonly families: FamilyDeltas[]; readonly records: number; readonly undecoded: number; readonly seq: number;
    /** This thread's CPU time so far (µs, user + system). */
    readonly cpuUs: number;
  }
  | { readonly t: 'failed'; readonly error: string };

/** A worker's series idle this long are dropped from its own tables (their counts were handed over long before). */
export const WORKER_IDLE_MS = 60_000;

const init = workerData as WorkerInit;
const port = parentPort;
if (!port) throw new Error('worker-thread.ts runs as a worker thread');

/**
 * The worker's module exposes nothing (its families are handed over, the main thread's are served),
 * so it gets a registry that keeps nothing, and prom-client is not loaded here: prom-client loads
 * node:v8, and a worker that loads node:v8 aborts a process started from a start-up snapshot, as
 * the image's agent is (Node 22: "Assertion failed: shutdown_wrap_template_.IsEmpty()").
 */
const noCounter = { inc: (): void => undefined };
const keepsNothing = {
  attach: () => undefined, detach: () => undefined, counter: () => noCounter, reset: () => undefined, remove: () => undefined,
} as unknown as MetricsRegistry;

const reader = new HandoffReader(init.sab, init.shape);
const cache = new IpCache();
const module = createMetricsModule({
  metrics: keepsNothing, remoteContext: init.remoteContext, nodeName: init.nodeName, handsOver: true, podLabels: init.podLabels,
  ...(init.maxSeriesPerMetric ? { maxSeriesPerMetric: init.maxSeriesPerMetric } : {}),
});
const next = init.enrich ? createEnricher(cacheLookup(cache), module) : module;
/** By source: its decoder, undefined while it loads, null when it failed to (its records count as undecoded). */
const decoders: (RawDecoder | null | undefined)[] = [];
const names: string[] = [];
/** By source: the bytes that pick a record's worker (its partition key), for ring runs. */
const keys: (PartitionKey | undefined)[] = [];
let generation = 0;
let records = 0;
let undecoded = 0;
let stopping = false;

function flush(seq: number): void {
  const families = module.takeDeltas();
  const cpu = process.threadCpuUsage();
  const msg: FromWorker = { t: 'deltas', generation, families, records, undecoded, seq, cpuUs: cpu.user + cpu.system };
  undecoded = 0;
  port?.postMessage(msg, families.flatMap((f) => [f.index.buffer, f.values.buffer, f.touched.buffer] as ArrayBuffer[]));
}

/** Decodes and counts published slots, at most `max`; returns how many, or -1 when a slot waits for its decoder. */
function processSlots(max: number): number {
  let n = 0;
  while (n < max) {
    const slot = reader.peek();
    if (slot === undefined) return n;
    const dec = decoders[slot.source];
    // Its 'source' message (an import) or its spec is on its way: the slot waits for them.
    if (dec === undefined || slot.generation > generation) return n === 0 ? -1 : n;
    // a ring run: this worker's partitions' records of it (every worker got the run)
    const key = keys[slot.source];
    if (dec === null) {
      const taken = slot.forEach(undefined, key);
      undecoded += taken;
      records += taken;
      reader.release(slot.filter ? taken : 0);
      n++;
      continue;
    }
    dec.batch(slot.param);
    const flows: Flow[] = [];
    const taken = slot.forEach((v, off, size) => {
      try {
        flows.push(dec.decode(v, off, size));
      } catch {
        undecoded++;
      }
    }, key);
    if (flows.length) next.consume({ source: names[slot.source] ?? '', flows });
    records += taken;
    reader.release(slot.filter ? taken : 0);
    n++;
  }
  return n;
}

const yieldNow = (): Promise<void> => new Promise((r) => setImmediate(r));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function loop(): Promise<void> {
  for (;;) {
    const n = processSlots(16);
    if (stopping && n <= 0) break; // a slot whose decoder never loaded is not counted: the main thread counts it lost
    if (n > 0) await yieldNow(); // messages and the flush timer get their turn
    else if (n < 0) await sleep(1);
    else await reader.wait(init.flushMs);
  }
  flush(-1);
  clearInterval(timer);
  port?.close();
}

const timer = setInterval(() => flush(0), init.flushMs);

port.on('message', (m: ToWorker) => {
  switch (m.t) {
    case 'source':
      names[m.id] = m.source;
      keys[m.id] = m.key;
      void (import(m.module) as Promise<RawDecoderModule>).then(
        (mod) => void (decoders[m.id] = mod.createRawDecoder(m.options)),
        (e: unknown) => {
          decoders[m.id] = null;
          port.postMessage({ t: 'failed', error: `decoder ${m.module}: ${(e as Error).message}` } satisfies FromWorker);
        },
      );
      return;
    case 'cache':
      for (const c of m.changes) applyIpCacheChange(cache, c);
      return;
    case 'spec': {
      // The same families as the main thread's; series idle WORKER_IDLE_MS leave the worker's tables.
      const spec = m.spec && { ...m.spec, contextOptions: m.spec.contextOptions.map((o) => ({ ...o, ttlMs: Math.max(o.ttlMs, WORKER_IDLE_MS) })) };
      module.apply(spec);
      generation = m.generation;
      return;
    }
    case 'flush':
      processSlots(Infinity);
      flush(m.seq);
      return;
    case 'stop':
      stopping = true;
      reader.interrupt();
      return;
  }
});

loop().catch((e: unknown) => {
  port.postMessage({ t: 'failed', error: (e as Error).message } satisfies FromWorker);
  process.exit(1);
});
