/**
 * The guard the pipeline (node.ts) puts around each of its stages: the enricher and every consumer.
 */
import type { FlowBatch, FlowConsumer } from '../flow/index.js';
import { errorFields, type Logger } from '../log/index.js';
import { catalog, type MetricsRegistry } from '../metrics/index.js';

/**
 * A stage that never lets an exception out of consume(): the batch's flows are counted in
 * lost_events_counter{type, reason} and the error is logged at most once a minute.
 */
export function guarded(next: FlowConsumer, type: string, reason: string, metrics: MetricsRegistry, log: Logger): FlowConsumer {
  let lastLog = 0;
  return {
    consume(batch: FlowBatch): void {
      try {
        next.consume(batch);
      } catch (e) {
        metrics.counter(catalog.lostEventsCounter).inc({ type, reason }, batch.flows.length);
        const now = Date.now();
        if (now - lastLog > 60_000) {
          lastLog = now;
          log.error('a pipeline stage failed; its batch is counted as lost', { stage: reason, source: batch.source, error: errorFields(e as Error) });
        }
      }
    },
  };
}
