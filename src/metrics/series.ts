/**
 * A metric family that aggregates on the hot path and builds label objects only when scraped.
 * prom-client's Registry accepts it as a metric (it duck-types `name`, `help`, `type` and `get()`),
 * so it is exposed with everything else.
 *
 * Why not prom-client's Gauge: `inc(labels)` hashes a label object per call; at a million flows a
 * second that is most of the budget.
 *
 * Storage is by index: a series is a slot in `values` and `touched` (typed arrays, so an update
 * writes numbers in place, with no boxed double and no object to chase), found from its label
 * values through a two-level Map only when a caller does not already hold its index. Indexes are
 * reused after a removal, and every removal counts in `removals` (which families may share): a
 * caller that keeps indexes drops them all when that count has moved.
 */
import type { MetricType } from './catalog.js';
import { escapeHelp, escapeLabel, valueText, type TextSink } from './exposition.js';

/** Separates label values inside a series key; `cleanLabelValue` keeps it out of values. */
export const SEP = '\x1f';

export function cleanLabelValue(v: string): string {
  return v.includes(SEP) ? v.replaceAll(SEP, ' ') : v;
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
  /** Counts removals (shared by the families of one Metrics Module spec); default: the family's own. */
  readonly removals?: RemovalCount;
}

/** How many series were removed so far: held indexes are good while it has not moved. */
export interface RemovalCount {
  n: number;
}

const INITIAL_CAPACITY = 64;

export class SeriesFamily {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge' | 'counter';
  readonly labelNames: readonly string[];
  readonly aggregator = 'sum';
  /**
   * Value and last update (ms, kept only by callers that expire series) by index. Replaced when the
   * family grows, so read them through the family each time, never keep the arrays.
   */
  values = new Float64Array(INITIAL_CAPACITY);
  touched = new Float64Array(INITIAL_CAPACITY);
  readonly removals: RemovalCount;
  /** prefix (fixed label values) → tail (context label values, each after SEP) → index. */
  readonly #index = new Map<string, Map<string, number>>();
  readonly #prefixOf: (string | undefined)[] = [];
  readonly #tailOf: (string | undefined)[] = [];
  readonly #free: number[] = [];
  #next = 0;
  #size = 0;
  #overflowAt = -1;
  readonly #max: number;
  readonly #fixed: number;
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
    this.#fixed = o.fixedLabels;
    this.#overflowPrefix = Array.from({ length: o.fixedLabels }, () => 'overflow').join(SEP);
    this.#overflowTail = (SEP + 'overflow').repeat(o.labelNames.length - o.fixedLabels);
    this.#onOverflow = o.onOverflow;
    this.removals = o.removals ?? { n: 0 };
  }

  get size(): number {
    return this.#size;
  }

  /**
   * The index of the series of `prefix` (fixed label values joined by SEP) and `tail` (the other
   * values, each preceded by SEP), created if needed. Two levels, so that one tail string is hashed
   * once and shared by every family a flow feeds. Past the budget, a new label set gets the overflow
   * series (and `onOverflow(1)`): `isOverflow` says so, and a caller must not keep that index.
   */
  index(prefix: string, tail: string, nowMs: number): number {
    let inner = this.#index.get(prefix);
    let i = inner?.get(tail);
    if (i !== undefined) return i;
    if (this.#size >= this.#max) {
      this.#onOverflow?.(1);
      if (this.#overflowAt >= 0) return this.#overflowAt;
      prefix = this.#overflowPrefix;
      tail = this.#overflowTail;
      inner = this.#index.get(prefix);
    }
    if (inner === undefined) this.#index.set(prefix, (inner = new Map()));
    i = this.#allocate(prefix, tail, nowMs);
    inner.set(tail, i);
    if (prefix === this.#overflowPrefix && tail === this.#overflowTail) this.#overflowAt = i;
    return i;
  }

  isOverflow(i: number): boolean {
    return i === this.#overflowAt;
  }

  /** Adds `delta` to the series of `prefix` and `tail` (see `index`). */
  add(prefix: string, tail: string, delta: number, nowMs: number): void {
    const i = this.index(prefix, tail, nowMs);
    this.values[i] = (this.values[i] as number) + delta;
    this.touched[i] = nowMs;
  }

  #allocate(prefix: string, tail: string, nowMs: number): number {
    let i = this.#free.pop();
    if (i === undefined) {
      i = this.#next++;
      if (i >= this.values.length) this.#grow();
    }
    this.values[i] = 0;
    this.touched[i] = nowMs;
    this.#prefixOf[i] = prefix;
    this.#tailOf[i] = tail;
    this.#size++;
    return i;
  }

  #grow(): void {
    const n = this.values.length * 2;
    const values = new Float64Array(n);
    values.set(this.values);
    const touched = new Float64Array(n);
    touched.set(this.touched);
    this.values = values;
    this.touched = touched;
  }

  #release(i: number): void {
    this.removals.n++;
    this.values[i] = 0;
    this.#prefixOf[i] = undefined;
    this.#tailOf[i] = undefined;
    if (i === this.#overflowAt) this.#overflowAt = -1;
    this.#free.push(i);
    this.#size--;
  }

  #deleteWhere(pred: (i: number, prefix: string, tail: string) => boolean): number {
    let n = 0;
    for (const [prefix, inner] of this.#index) {
      for (const [tail, i] of inner) {
        if (!pred(i, prefix, tail)) continue;
        inner.delete(tail);
        this.#release(i);
        n++;
      }
      if (inner.size === 0) this.#index.delete(prefix);
    }
    return n;
  }

  /** Removes series not updated since `cutoffMs`; returns how many. */
  expire(cutoffMs: number): number {
    const touched = this.touched;
    return this.#deleteWhere((i) => (touched[i] as number) < cutoffMs);
  }

  /**
   * Removes the series whose tail (context label values, each after SEP) `match` accepts, in steps:
   * the generator yields after every `step` series looked at, so that a caller can let other work
   * run in between, and returns how many it removed. `match` is called once per distinct tail
   * (series of one tail under several prefixes share its answer). Between steps the family may
   * change (flows, TTL); series added meanwhile are looked at when the walk has not passed them.
   */
  *removeTailsInSteps(match: (tail: string) => boolean, step: number): Generator<void, number, void> {
    const answers = new Map<string, boolean>();
    let n = 0;
    let seen = 0;
    for (const [prefix, inner] of this.#index) {
      for (const [tail, i] of inner) {
        let a = answers.get(tail);
        if (a === undefined) answers.set(tail, (a = match(tail)));
        if (a) {
          inner.delete(tail);
          this.#release(i);
          n++;
        }
        if (++seen >= step) {
          seen = 0;
          yield;
        }
      }
      if (inner.size === 0 && this.#index.get(prefix) === inner) this.#index.delete(prefix);
    }
    return n;
  }

  /** `removeTailsInSteps` in one go. */
  removeTails(match: (tail: string) => boolean): number {
    return drain(this.removeTailsInSteps(match, Infinity));
  }

  clear(): void {
    this.#deleteWhere(() => true);
  }

  /**
   * A worker thread's counts since its last hand-over (src/metrics/module/handover.ts), by index:
   * each series whose value is not 0 goes to `out` and is set back to 0. A series whose label values
   * `seen` does not hold at its index yet (new, or an index reused) goes to `announce` first, and
   * `seen` remembers them. Returns how many went out.
   */
  takeIndexed(
    seen: { prefix: (string | undefined)[]; tail: (string | undefined)[] },
    announce: (i: number, prefix: string, tail: string) => void,
    out: (i: number, value: number, touchedMs: number) => void,
  ): number {
    let n = 0;
    const values = this.values;
    for (let i = 0; i < this.#next; i++) {
      const v = values[i] as number;
      if (v === 0) continue;
      const prefix = this.#prefixOf[i];
      const tail = this.#tailOf[i];
      if (prefix === undefined || tail === undefined) continue;
      if (seen.prefix[i] !== prefix || seen.tail[i] !== tail) {
        seen.prefix[i] = prefix;
        seen.tail[i] = tail;
        announce(i, prefix, tail);
      }
      values[i] = 0;
      out(i, v, this.touched[i] as number);
      n++;
    }
    return n;
  }

  /**
   * The family's text exposition block, what formatExposition writes from `get()` (a test checks
   * they agree), without building a label object per series per scrape. Each series' line is made
   * anew: keeping them between scrapes (an array by series index) made the deleted pods' endpoints
   * outlive three full GCs in test/churn/memo-retention.test.ts (freed by a fourth, or by a heap
   * snapshot's GC; no strong path from it to them was found), so they are not kept. Within one
   * scrape, the label text of a prefix and of a tail is made once (a tail is shared by the
   * directions, and the like, of one peer pair) and each line is handed to `out` as it is made.
   */
  writeExposition(out: TextSink): void {
    const name = escapeHelp(this.name);
    const names = this.labelNames;
    out.push(`# HELP ${name} ${escapeHelp(this.help)}\n# TYPE ${name} ${this.type}`);
    const tails = new Map<string, string>();
    for (const [prefix, inner] of this.#index) {
      const fixed = prefix.split(SEP);
      // Always `#fixed` values and tails of SEP-led values (index() is given them so); anything else takes the general path.
      const general = fixed.length !== this.#fixed || fixed.length > names.length;
      const head = '\n' + name + labelText(names, fixed, 0, fixed.length);
      for (const [tail, i] of inner) {
        if (general || (tail !== '' && !tail.startsWith(SEP))) {
          out.push('\n' + name + labelText(names, (prefix + tail).split(SEP), 0, names.length) + '} ' + valueText(this.values[i] as number));
          continue;
        }
        let t = tails.get(tail);
        if (t === undefined) {
          t = labelText(names, tail.split(SEP), fixed.length, names.length - fixed.length, 1) + '} ';
          tails.set(tail, t);
        }
        out.push(head + t + valueText(this.values[i] as number));
      }
    }
  }

  /** writeExposition as one string. */
  exposition(): string {
    const parts: string[] = [];
    this.writeExposition({ push: (s) => parts.push(s) });
    return parts.join('');
  }

  /** prom-client's metric interface. */
  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string>; value: number }[] } {
    const names = this.labelNames;
    const out: { labels: Record<string, string>; value: number }[] = [];
    for (const [prefix, inner] of this.#index) {
      for (const [tail, i] of inner) {
        const parts = (prefix + tail).split(SEP);
        const labels: Record<string, string> = {};
        for (let k = 0; k < names.length; k++) labels[names[k] as string] = parts[k] ?? '';
        out.push({ labels, value: this.values[i] as number });
      }
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: out };
  }
}

/**
 * `{a="x",b="y"` (or `,a="x"` past the first label): labels names[from .. from+count) with values
 * parts[skip ..] ('' when missing), escaped.
 */
function labelText(names: readonly string[], parts: readonly string[], from: number, count: number, skip = 0): string {
  let s = '';
  for (let k = 0; k < count; k++) s += (from + k === 0 ? '{' : ',') + (names[from + k] as string) + '="' + escapeLabel(parts[skip + k] ?? '') + '"';
  return s;
}

/** Runs a stepwise job to its end; returns its result. */
export function drain<T>(job: Generator<void, T, void>): T {
  for (;;) {
    const r = job.next();
    if (r.done) return r.value;
  }
}
