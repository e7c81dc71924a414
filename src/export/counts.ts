/**
 * The one place flow_log_records_total is written: each sink counts through its SinkCounts, so every
 * record it was handed ends as exactly one `written` or one `dropped{reason}` count.
 */
import { catalog, type MetricsRegistry } from '../metrics/index.js';

/** Why a sink dropped records (the `reason` label); sinks may add their own. */
export type DropReason = 'queue_full' | 'disk_full' | 'unwritable' | 'rejected' | 'retries_exhausted' | 'encode' | 'sink_error' | 'closed' | (string & {});

export interface SinkCounts {
  written(n: number): void;
  dropped(reason: DropReason, n: number): void;
}

export function sinkCounts(metrics: MetricsRegistry, sink: string): SinkCounts {
  const c = metrics.counter(catalog.flowLogRecords);
  return {
    written(n) {
      if (n > 0) c.inc({ sink, result: 'written' }, n);
    },
    dropped(reason, n) {
      if (n > 0) c.inc({ sink, result: 'dropped', reason }, n);
    },
  };
}
