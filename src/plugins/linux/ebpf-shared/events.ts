/** The event side shared by the eBPF plugins: drain a ring buffer into flow batches, count losses. */
import { openRingBuffer, type BpfObject, type RecordDecoder, type RingBufferReader } from '../../../ffi/linux/index.js';
import type { Flow } from '../../../flow/index.js';
import { catalog } from '../../../metrics/index.js';
import { errMessage, every, type PluginContext, type ResourceStack } from '../../../plugin/index.js';
import type { KernelClock } from './clock.js';
import { FOLLOW_UP_MS } from './hooks.js';

export interface EventWiring<T> {
  readonly source: string;
  readonly eventsMap: string;
  readonly lostMap: string;
  readonly decode: RecordDecoder<T>;
  /** Handles one drain's records (counters, flows). */
  readonly onRecords: (records: T[]) => void;
  /** The decoder's clock, resynced every metrics interval. */
  readonly clock?: KernelClock;
  /** RingBufferOptions.beforeRelease. */
  readonly beforeRelease?: () => void;
}

/**
 * Opens the object's ring buffer, drained from the event loop, and reports kernel-side losses
 * (ring full) every metrics interval as lost_events_counter{type="kernel"}, and records that failed
 * to decode as lost_events_counter{type="parser"} (also logged, at most once per interval). A ring
 * that cannot be read any more (ring_buffer__consume failed) fails the plugin, so the manager
 * restarts it.
 */
export function wireEvents<T>(s: ResourceStack, ctx: PluginContext<unknown>, obj: BpfObject, w: EventWiring<T>): RingBufferReader {
  let errors = 0;
  let undecoded = 0;
  let lastError = '';
  const ring = s.use(
    openRingBuffer(obj.map(w.eventsMap), {
      decode: w.decode,
      ...(w.beforeRelease ? { beforeRelease: w.beforeRelease } : {}),
      lostMap: obj.map(w.lostMap),
      followUpMs: FOLLOW_UP_MS,
      onBatch: (records) => {
        ctx.self.parsedPackets(records.length);
        w.onRecords(records);
      },
      onError: (e, lost) => {
        errors++;
        undecoded += lost;
        lastError = errMessage(e);
      },
      onConsumeError: (e) => ctx.status.failed(e),
    }),
  );
  every(s, ctx.agent.metricsIntervalMs, () => {
    w.clock?.resync();
    try {
      const lost = ring.takeLost();
      if (lost > 0) ctx.self.lostEvents(catalog.lostEventTypes.kernel, lost);
    } catch (e) {
      lastError = errMessage(e);
      errors++;
    }
    if (undecoded) ctx.self.lostEvents(catalog.lostEventTypes.parser, undecoded);
    if (errors) {
      ctx.log.warn('event records failed to decode', { count: errors, lost: undecoded, error: lastError, source: w.source });
      errors = 0;
    }
    undecoded = 0;
  });
  return ring;
}

/** Hands flows on as one batch (nothing when empty). */
export function emitFlows(ctx: PluginContext<unknown>, source: string, flows: Flow[]): void {
  if (flows.length) ctx.flows?.consume({ source, flows });
}
