/**
 * The pipeline's worker threads (`pipelineWorkers` > 0), main-thread side. A source that supports it
 * (packetparser) copies its raw records into a sink (`openRaw`) instead of decoding them; the sink
 * fills one hand-off slot at a time (handoff.ts) and publishes it to the worker with the shortest
 * backlog; workers decode, enrich and count (worker-thread.ts) and hand their counts over every
 * `flushMs`, merged here into the Metrics Module whose families /metrics serves.
 *
 * - The ring drain never waits: a record that finds every worker's slots full is counted in
 *   lost_events_counter{type="pipeline", reason="worker_backlog"}.
 * - A worker that dies is restarted (after `restartMs`); the records handed to it whose counts had
 *   not reached the main thread are counted in lost_events_counter{type="pipeline", reason="worker_exit"}.
 * - The spec (its generation) and the IP cache's changes are mirrored to every worker; counts taken
 *   under an earlier spec are not merged (apply() cleared those families, as it does in-thread).
 * - Consumers that need Flow objects here (Hubble, flow-log exporters, API-server latency) still get
 *   the source's flows decoded on this thread, in drain order (`wantsFlows`).
 */
import { Worker } from 'node:worker_threads';
import type { IpCache, IpCacheChange } from '../cache/index.js';
import type { FlowConsumer, RawDecoderRef, RawRecordSink } from '../flow/index.js';
import { errorFields, type Logger } from '../log/index.js';
import { catalog, type MetricsRegistry } from '../metrics/index.js';
import { DeltaMerger, type MetricsModule } from '../metrics/module/index.js';
import { DEFAULT_HANDOFF, HandoffWriter, createHandoffBuffer, type HandoffShape } from './handoff.js';
import { LINGER_MS, createRawSink, type SinkPool, type SinkSlot } from './raw-sink.js';
import type { FromWorker, ToWorker, WorkerInit } from './worker-thread.js';

export interface PipelineWorkersOptions {
  readonly workers: number;
  readonly module: MetricsModule;
  readonly cache: IpCache | undefined;
  readonly remoteContext: boolean;
  readonly nodeName: string;
  /** The module's pod labels (metricsPodLabelsAllowlist), which the workers' modules must have too. */
  readonly podLabels?: readonly { readonly key: string; readonly name: string }[];
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
  /** This thread's consumers of the offloaded sources' flows (Hubble, exporters, API-server latency); not counted again. */
  readonly onThread: FlowConsumer;
  /** Whether `onThread` wants flows now (sources decode here only then). */
  readonly wantsFlows: () => boolean;
  /**
   * The whole pipeline on this thread (enricher, Metrics Module, the other consumers): the sources'
   * flows go there while no worker runs (between a worker's death and its restart, or for good after
   * workers failed to start QUICK_FAILURES times in a row).
   */
  readonly fallback: FlowConsumer;
  /** How often workers hand their counts over (default 1000 ms). */
  readonly flushMs?: number;
  readonly shape?: HandoffShape;
  /** How long after a worker died it is started again (default 1000 ms). */
  readonly restartMs?: number;
  /** Tests: another worker script. */
  readonly workerUrl?: URL;
}

export interface PipelineWorkerStats {
  readonly workers: number;
  /** Records handed to workers, and those whose counts reached this thread. */
  readonly handed: number;
  readonly counted: number;
  readonly lostBacklog: number;
  readonly lostExit: number;
  readonly restarts: number;
  readonly merges: number;
  /** Series merged, and the main thread's CPU time merging took (ms), since the start. */
  readonly seriesMerged: number;
  readonly mergeMs: number;
  /** Records each worker (by slot) counted, since it was last started. */
  readonly perWorker: readonly number[];
  /** CPU time of the worker threads (ms, as of their last hand-over), every incarnation. */
  readonly workerCpuMs: number;
}

export interface PipelineWorkers extends AsyncDisposable {
  openRaw(ref: RawDecoderRef): RawRecordSink;
  /** Asks every worker to count what it holds and hand it over; resolves when merged (or after `timeoutMs`). */
  flushNow(timeoutMs?: number): Promise<void>;
  stats(): PipelineWorkerStats;
  /** Each live worker's hand-off slots published and not yet read. */
  backlogs(): number[];
  /** Tests: the worker threads, by slot. */
  threads(): readonly (Worker | undefined)[];
}

const sourceMessage = (id: number, r: RawDecoderRef): ToWorker => ({
  t: 'source', id, source: r.source, module: r.module, options: r.options, ...(r.partitionKey ? { key: r.partitionKey } : {}),
});

/** Workers that end within QUICK_MS of their start this many times in a row are not started again. */
const QUICK_FAILURES = 5;
const QUICK_MS = 5000;

interface Slot extends SinkSlot {
  worker: Worker | undefined;
  /** Records published to this worker, and counted by it (its last deltas). */
  handed: number;
  counted: number;
  exited: Promise<void>;
  /** Its series indexes → the main thread's. */
  merger: DeltaMerger;
  /** Its CPU time at its last hand-over (µs). */
  cpuUs: number;
}


export function startPipelineWorkers(o: PipelineWorkersOptions): PipelineWorkers {
  const shape = o.shape ?? DEFAULT_HANDOFF;
  const flushMs = o.flushMs ?? 1000;
  const url = o.workerUrl ?? new URL('./worker-thread.js', import.meta.url);
  const sources: RawDecoderRef[] = [];
  const slots: Slot[] = [];
  const waiters = new Map<number, () => void>();
  let flushSeq = 0;
  let sentGeneration = -1;
  let stopping = false;
  const restarts: NodeJS.Timeout[] = [];
  let quickFailures = 0;
  let gaveUp = false;
  const alive = (): boolean => slots.some((s) => s.alive);
  const st = { handed: 0, counted: 0, lostBacklog: 0, lostExit: 0, restarts: 0, merges: 0, seriesMerged: 0, mergeMs: 0, workerCpuMs: 0 };
  const reported = { backlog: 0, exit: 0 };
  const lost = o.metrics.counter(catalog.lostEventsCounter);

  const post = (s: Slot, m: ToWorker): void => s.worker?.postMessage(m);
  const specMessage = (): ToWorker => ({ t: 'spec', spec: o.module.spec(), generation: o.module.generation() });
  const syncSpec = (): void => {
    const g = o.module.generation();
    if (g === sentGeneration) return;
    sentGeneration = g;
    const m = specMessage();
    for (const s of slots) post(s, m);
  };

  // The IP cache's changes, posted in one message per turn of the event loop.
  let queued: IpCacheChange[] = [];
  let posting: NodeJS.Immediate | undefined;
  const cacheSub = o.cache?.subscribe((c) => {
    queued.push(c);
    posting ??= setImmediate(() => {
      posting = undefined;
      const m: ToWorker = { t: 'cache', changes: queued };
      queued = [];
      for (const s of slots) post(s, m);
    });
  });
  const snapshot = (): IpCacheChange[] => {
    const c = o.cache;
    if (!c) return [];
    return [
      ...[...c.nodes()].map((e) => ({ op: 'upsertNode', e }) as const),
      ...[...c.services()].map((e) => ({ op: 'upsertService', e }) as const),
      ...[...c.pods()].map((e) => ({ op: 'upsertPod', e }) as const),
    ];
  };

  const keyOf = (source: number): RawDecoderRef['partitionKey'] => sources[source]?.partitionKey;
  /** Adds the records a worker took from ring runs (filtered slots) to what it was handed. */
  const taken = (s: Slot): void => {
    const t = s.writer.takenSince();
    s.handed += t;
    st.handed += t;
  };

  function onMessage(s: Slot, m: FromWorker): void {
    if (m.t === 'failed') {
      o.log.error('a pipeline worker failed', { error: m.error });
      return;
    }
    taken(s);
    st.counted += m.records - s.counted;
    s.counted = m.records;
    st.workerCpuMs += (m.cpuUs - s.cpuUs) / 1000;
    s.cpuUs = m.cpuUs;
    if (m.undecoded) lost.inc({ type: catalog.lostEventTypes.parser, reason: 'pipeline_worker' }, m.undecoded);
    if (m.generation === o.module.generation() && m.families.length) {
      const t0 = process.threadCpuUsage();
      st.seriesMerged += o.module.merge(m.families, s.merger);
      const t = process.threadCpuUsage(t0);
      st.mergeMs += (t.user + t.system) / 1000;
    }
    st.merges++;
    if (m.seq > 0) waiters.get(m.seq)?.();
  }

  function start(i: number): void {
    const sab = createHandoffBuffer(shape);
    const init: WorkerInit = { sab, shape, remoteContext: o.remoteContext, nodeName: o.nodeName, enrich: o.cache !== undefined, flushMs, podLabels: o.podLabels ?? [] };
    const worker = new Worker(url, { workerData: init });
    const startedAt = performance.now();
    let exited: () => void = () => undefined;
    const s: Slot = { worker, writer: new HandoffWriter(sab, shape), handed: 0, counted: 0, alive: true, exited: new Promise((r) => (exited = r)), merger: new DeltaMerger(), cpuUs: 0, owner: -1, openedAt: 0 };
    slots[i] = s;
    worker.on('message', (m: FromWorker) => onMessage(s, m));
    worker.on('error', (e) => o.log.error('a pipeline worker threw', { worker: i, error: errorFields(e) }));
    worker.on('exit', (code) => {
      s.alive = false;
      s.worker = undefined;
      exited();
      // Its records never published (a slot still open) are lost with it, like those it held; of the
      // ring runs every worker got, those of its partitions (what it took, and what it had not read).
      taken(s);
      const gone = s.handed - s.counted + s.writer.unread(keyOf);
      s.owner = -1;
      if (gone > 0) {
        st.lostExit += gone;
        lost.inc({ type: catalog.lostEventTypes.pipeline, reason: 'worker_exit' }, gone);
        reported.exit = st.lostExit;
      }
      if (stopping) return;
      quickFailures = performance.now() - startedAt < QUICK_MS ? quickFailures + 1 : 0;
      if (quickFailures >= QUICK_FAILURES) {
        if (!gaveUp) o.log.error('pipeline workers keep failing at start; flows are decoded, enriched and counted on the main thread', { failures: quickFailures, code });
        gaveUp = true;
        return;
      }
      o.log.error('a pipeline worker exited; starting it again', { worker: i, code, recordsLost: gone, restartMs: o.restartMs ?? 1000 });
      const t = setTimeout(() => {
        restarts.splice(restarts.indexOf(t), 1);
        if (stopping) return;
        st.restarts++;
        start(i);
      }, o.restartMs ?? 1000);
      restarts.push(t);
    });
    worker.unref();
    post(s, specMessage());
    const snap = snapshot();
    if (snap.length) post(s, { t: 'cache', changes: snap });
    sources.forEach((r, id) => post(s, sourceMessage(id, r)));
  }

  for (let i = 0; i < o.workers; i++) start(i);
  sentGeneration = o.module.generation();

  /** The worker whose next slot is free and whose backlog is shortest (ties in turn), its slot opened; or undefined. */
  let turn = 0;
  function pick(source: number, param: number): Slot | undefined {
    let best: Slot | undefined;
    let least = Infinity;
    turn = (turn + 1) % slots.length;
    for (let k = 0; k < slots.length; k++) {
      const s = slots[(turn + k) % slots.length] as Slot;
      if (!s.alive || s.writer.isOpen) continue;
      const b = s.writer.backlog();
      if (b < least) {
        least = b;
        best = s;
      }
    }
    const g = o.module.generation();
    if (best && best.writer.open(source, param, g)) return best;
    for (const s of slots) if (s !== best && s.alive && !s.writer.isOpen && s.writer.open(source, param, g)) return s;
    return undefined;
  }

  const publish = (s: Slot): void => {
    // a ring run's records are counted as the worker takes them (`taken`)
    const n = s.writer.filter === 0 ? s.writer.pending : 0;
    s.writer.publish();
    s.handed += n;
    st.handed += n;
  };

  const sinkPool: SinkPool = {
    slots, pick, publish, syncSpec, alive,
    generation: () => o.module.generation(),
    refused: (records = 1) => void (st.lostBacklog += records),
    wantsFlows: o.wantsFlows, onThread: o.onThread, fallback: o.fallback,
  };

  // Slots left open by drains that came no more (raw-sink.ts: LINGER_MS) go out now.
  const publishOpen = (olderThan: number): void => {
    for (const s of slots) if (s.alive && s.writer.isOpen && s.openedAt <= olderThan) publish(s);
  };
  const linger = setInterval(() => publishOpen(performance.now() - LINGER_MS), LINGER_MS);
  linger.unref();

  // Lost records are counted once per interval, not per record.
  const report = setInterval(() => {
    syncSpec();
    if (st.lostBacklog > reported.backlog) {
      lost.inc({ type: catalog.lostEventTypes.pipeline, reason: 'worker_backlog' }, st.lostBacklog - reported.backlog);
      reported.backlog = st.lostBacklog;
    }
  }, flushMs);
  report.unref();

  return {
    openRaw(ref) {
      const id = sources.push(ref) - 1;
      for (const s of slots) post(s, sourceMessage(id, ref));
      return createRawSink(id, ref, sinkPool);
    },
    async flushNow(timeoutMs = 10_000) {
      publishOpen(Infinity);
      syncSpec();
      const live = slots.filter((s) => s.alive);
      const seqs = live.map(() => ++flushSeq);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(live.map((s, k) => new Promise<void>((r) => {
          const seq = seqs[k] as number;
          waiters.set(seq, () => {
            waiters.delete(seq);
            r();
          });
          post(s, { t: 'flush', seq });
        }))),
        new Promise<void>((r) => (timer = setTimeout(r, timeoutMs))),
      ]);
      clearTimeout(timer);
      for (const q of seqs) waiters.delete(q);
    },
    stats: () => ({ workers: slots.filter((s) => s.alive).length, ...st, perWorker: slots.map((s) => s.counted) }),
    threads: () => slots.map((s) => s.worker),
    backlogs: () => slots.filter((s) => s.alive).map((s) => s.writer.backlog()),
    async [Symbol.asyncDispose]() {
      if (stopping) return;
      stopping = true;
      clearInterval(report);
      clearInterval(linger);
      for (const t of restarts) clearTimeout(t);
      cacheSub?.[Symbol.dispose]();
      clearImmediate(posting);
      for (const s of slots) {
        if (s.writer.isOpen) publish(s);
        post(s, { t: 'stop' });
      }
      // Each worker counts what its ring holds and hands it over, then exits; one that does not is terminated.
      let timer: NodeJS.Timeout | undefined;
      const all = Promise.all(slots.map((s) => s.exited));
      await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, 5000)))]);
      clearTimeout(timer);
      await Promise.all(slots.map((s) => s.worker?.terminate()));
      await all;
      if (st.lostBacklog > reported.backlog) lost.inc({ type: catalog.lostEventTypes.pipeline, reason: 'worker_backlog' }, st.lostBacklog - reported.backlog);
    },
  };
}
