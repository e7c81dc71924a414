/** tcpretrans's node counter: PERCPU_ARRAY key 0, value { u64 skbs; u64 segs }. */
import { u32Key, type PerCpuReader } from '../../../ffi/linux/index.js';

export const METRICS_MAP = 'retina_tcpretrans_metrics';
export const EVENTS_MAP = 'retina_tcpretrans_events';
export const LOST_MAP = 'retina_tcpretrans_lost';

export interface RetransTotals {
  /** Retransmitted skbs (one per tracepoint hit). */
  readonly skbs: number;
  /** Retransmitted segments (what /proc/net/snmp RetransSegs counts). */
  readonly segs: number;
}

export function readRetransTotals(reader: PerCpuReader): RetransTotals {
  const sum = reader.sum(u32Key(0));
  return { skbs: sum?.[0] ?? 0, segs: sum?.[1] ?? 0 };
}

/** A counter fed from a kernel total: returns how much to add (never negative). */
export function deltaTracker(): (total: number) => number {
  let last = 0;
  return (total) => {
    const d = total >= last ? total - last : total;
    last = total;
    return d;
  };
}
