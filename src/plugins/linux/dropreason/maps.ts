/** Reads the kernel's (reason, direction) totals and turns them into drop_count / drop_bytes rows. */
import type { PerCpuReader } from '../../../ffi/linux/index.js';
import type { Labels } from '../../../metrics/index.js';
import { DIRECTIONS, DROP_KEY_SIZE, decodeDropKey } from './decode.js';

export const METRICS_MAP = 'retina_dropreason_metrics';
export const EVENTS_MAP = 'retina_dropreason_events';
export const LOST_MAP = 'retina_dropreason_lost';

export type DropLabels = Labels<'reason' | 'direction'>;

export interface DropRows {
  readonly count: [DropLabels, number][];
  readonly bytes: [DropLabels, number][];
}

/** Sums every key over CPUs; keys with the same label set (none today) add up. */
export function readDropTotals(reader: PerCpuReader, reasonName: (n: number) => string): DropRows {
  const totals = new Map<string, { labels: DropLabels; packets: number; bytes: number }>();
  for (const raw of reader.keys(DROP_KEY_SIZE)) {
    const sum = reader.sum(raw);
    if (!sum) continue;
    const k = decodeDropKey(raw);
    const labels = { reason: reasonName(k.reason), direction: DIRECTIONS[k.direction] ?? 'unknown' };
    const id = `${labels.reason}/${labels.direction}`;
    const t = totals.get(id) ?? { labels, packets: 0, bytes: 0 };
    t.packets += sum[0] ?? 0;
    t.bytes += sum[1] ?? 0;
    totals.set(id, t);
  }
  const rows: DropRows = { count: [], bytes: [] };
  for (const t of totals.values()) {
    rows.count.push([t.labels, t.packets]);
    rows.bytes.push([t.labels, t.bytes]);
  }
  return rows;
}
