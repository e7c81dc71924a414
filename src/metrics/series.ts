/**
 * A metric family that aggregates on the hot path in a plain Map keyed by the joined label values,
 * and builds label objects only when scraped. prom-client's Registry accepts it as a metric (it
 * duck-types `name`, `help`, `type` and `get()`), so it is exposed with everything else.
 *
 * Why not prom-client's Gauge: `inc(labels)` hashes a label object per call; at a million flows a
 * second that is most of the budget. Here a flow costs two Map lookups on strings
 * whose hashes are already known, or none when the caller keeps the Series (see `Series.dead`).
 */
import type { MetricType } from './catalog.js';

/** Separates label values inside a series key; `cleanLabelValue` keeps it out of values. */
export const SEP = '\x1f';

export function cleanLabelValue(v: string): string {
  return v.includes(SEP) ? v.replaceAll(SEP, ' ') : v;
}

/**
 * One series. Callers may hold on to it between flows (the Metrics Module caches series per
 * context tail) as long as they check `dead`: a removed series is marked so and never revived.
 */
export class Series {
  value = 0;
  touchedMs: number;
  /** Removed from its family (expired, forgotten, cleared): look it up again. */
  dead = false;
  /** The family's overflow series: every flow folded into it must go through `series()` again. */
  readonly overflow: boolean;
  constructor(nowMs: number, overflow: boolean) {
    this.touchedMs = nowMs;
    this.overflow = overflow;
  }
}

export interface FamilyOptions {
  readonly name: string;
  readonly help: string;
  readonly type: Exclude<MetricType, 'histogram'>;
  readonly labelNames: readonly string[];
  /** Most series kept; further label sets go to the overflow series (all values `overflow`). */
  readonly maxSeries: number;
  /** Called once per flow folded into the overflow series. */
  readonly onOverflow?: (n: number) => void;
}

export class SeriesFamily {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge' | 'counter';
  readonly labelNames: readonly string[];
  readonly aggregator = 'sum';
  /** prefix (fixed label values) → tail (context label values, each after SEP) → series. */
  readonly #series = new Map<string, Map<string, Series>>();
  #size = 0;
  readonly #max: number;
  readonly #overflowPrefix: string;
  readonly #overflowTail: string;
  readonly #onOverflow: ((n: number) => void) | undefined;

  constructor(o: FamilyOptions & { readonly fixedLabels: number }) {
    if (o.fixedLabels < 1) throw new Error(`${o.name}: a series family needs at least one fixed label`);
    this.name = o.name;
    this.help = o.help;
    this.type = o.type;
    this.labelNames = o.labelNames;
    this.#max = o.maxSeries;
    this.#overflowPrefix = Array.from({ length: o.fixedLabels }, () => 'overflow').join(SEP);
    this.#overflowTail = (SEP + 'overflow').repeat(o.labelNames.length - o.fixedLabels);
    this.#onOverflow = o.onOverflow;
  }

  get size(): number {
    return this.#size;
  }

  /**
   * The series of `prefix` (fixed label values joined by SEP) and `tail` (the other values, each
   * preceded by SEP), created if needed. Two levels, so that one tail string is hashed once and
   * shared by every family a flow feeds. Past the budget, a new label set gets the overflow series
   * (and `onOverflow(1)`): its `overflow` is true, so a caller must not keep it for later flows.
   */
  series(prefix: string, tail: string, nowMs: number): Series {
    let inner = this.#series.get(prefix);
    let s = inner?.get(tail);
    if (s !== undefined) return s;
    let overflow = false;
    if (this.#size >= this.#max) {
      this.#onOverflow?.(1);
      prefix = this.#overflowPrefix;
      tail = this.#overflowTail;
      inner = this.#series.get(prefix);
      s = inner?.get(tail);
      if (s !== undefined) return s;
      overflow = true;
    }
    if (inner === undefined) this.#series.set(prefix, (inner = new Map()));
    s = new Series(nowMs, overflow);
    inner.set(tail, s);
    this.#size++;
    return s;
  }

  /** Adds `delta` to the series of `prefix` and `tail` (see `series`). */
  add(prefix: string, tail: string, delta: number, nowMs: number): void {
    const s = this.series(prefix, tail, nowMs);
    s.value += delta;
    s.touchedMs = nowMs;
  }

  #deleteWhere(pred: (key: string, s: Series) => boolean): number {
    let n = 0;
    for (const [prefix, inner] of this.#series) {
      for (const [tail, s] of inner) {
        if (pred(prefix + tail, s)) {
          s.dead = true;
          inner.delete(tail);
          n++;
        }
      }
      if (inner.size === 0) this.#series.delete(prefix);
    }
    this.#size -= n;
    return n;
  }

  /** Removes series not touched since `cutoffMs`; returns how many. */
  expire(cutoffMs: number): number {
    return this.#deleteWhere((_k, s) => s.touchedMs < cutoffMs);
  }

  /** Removes series for which `match(labelValues)` is true; returns how many. */
  removeWhere(match: (values: readonly string[]) => boolean): number {
    return this.#deleteWhere((k) => match(k.split(SEP)));
  }

  clear(): void {
    for (const inner of this.#series.values()) for (const s of inner.values()) s.dead = true;
    this.#series.clear();
    this.#size = 0;
  }

  /** prom-client's metric interface. */
  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string>; value: number }[] } {
    const names = this.labelNames;
    const values: { labels: Record<string, string>; value: number }[] = [];
    for (const [prefix, inner] of this.#series) {
      for (const [tail, s] of inner) {
        const parts = (prefix + tail).split(SEP);
        const labels: Record<string, string> = {};
        for (let i = 0; i < names.length; i++) labels[names[i] as string] = parts[i] ?? '';
        values.push({ labels, value: s.value });
      }
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
