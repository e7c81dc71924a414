/**
 * Replaces the series one plugin owns in a family that another plugin also writes (winutil and
 * hnsstats both write tcp_connection_stats, with different statistic names): series this writer set
 * last time and not this time are removed, everyone else's are left alone. replaceSeries (which
 * resets the whole family) would let the two plugins wipe each other every tick.
 */
import type { Gauge } from 'prom-client';

export type Row = readonly [Readonly<Record<string, string>>, number];

export class OwnedSeries {
  #last = new Map<string, Readonly<Record<string, string>>>();

  constructor(private readonly gauge: Gauge) {}

  replace(rows: readonly Row[]): void {
    const now = new Map<string, Readonly<Record<string, string>>>();
    for (const [labels, value] of rows) {
      this.gauge.set(labels, value);
      now.set(JSON.stringify(labels), labels);
    }
    for (const [key, labels] of this.#last) if (!now.has(key)) this.gauge.remove(labels);
    this.#last = now;
  }
}
