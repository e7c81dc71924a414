/**
 * Counts a worker thread's Metrics Module hands to the main thread's (src/pipeline/workers.ts), by
 * series index: a series' label values cross once (announced), then only its index, its count
 * since the last hand-over and its last update, in typed arrays. The main thread maps a worker's
 * index to its own series once and adds to it in place; a mapping is dropped when the family
 * removed series since (TTL, deleted pods: `removals` moved) or is another family (a new spec), and
 * found again from the announced values.
 */
import type { SeriesFamily } from '../series.js';

export interface FamilyDeltas {
  readonly name: string;
  /** Series the main thread has not been told of: index, prefix and tail (series.ts). */
  readonly announced: { readonly index: number[]; readonly prefix: string[]; readonly tail: string[] };
  /** Each series counted since the last hand-over: its index, the count and its last update (ms). */
  readonly index: Int32Array;
  readonly values: Float64Array;
  readonly touched: Float64Array;
  /** Flows folded into the overflow series. */
  readonly overflow: number;
}

/** The worker's side: what each family told the main thread so far. */
export class DeltaTaker {
  #seen = new Map<SeriesFamily, { prefix: (string | undefined)[]; tail: (string | undefined)[] }>();

  take(family: SeriesFamily, overflow: number): FamilyDeltas | undefined {
    let seen = this.#seen.get(family);
    if (seen === undefined) this.#seen.set(family, (seen = { prefix: [], tail: [] }));
    const announced = { index: [] as number[], prefix: [] as string[], tail: [] as string[] };
    const idx: number[] = [];
    const values: number[] = [];
    const touched: number[] = [];
    family.takeIndexed(seen, (i, p, t) => {
      announced.index.push(i);
      announced.prefix.push(p);
      announced.tail.push(t);
    }, (i, v, at) => {
      idx.push(i);
      values.push(v);
      touched.push(at);
    });
    if (!idx.length && !overflow) return undefined;
    return { name: family.name, announced, index: Int32Array.from(idx), values: Float64Array.from(values), touched: Float64Array.from(touched), overflow };
  }

  /** A new spec: its families start unannounced. */
  reset(): void {
    this.#seen = new Map();
  }
}

interface Mapping {
  family: SeriesFamily;
  removals: number;
  readonly prefix: string[];
  readonly tail: string[];
  /** Worker index → this family's index, -1 unknown. */
  map: number[];
}

/** The main thread's side, one per worker. */
export class DeltaMerger {
  readonly #families = new Map<string, Mapping>();

  /** Adds one family's counts; returns how many series. */
  merge(family: SeriesFamily, d: FamilyDeltas): number {
    let m = this.#families.get(d.name);
    if (m === undefined || m.family !== family) this.#families.set(d.name, (m = { family, removals: family.removals.n, prefix: [], tail: [], map: [] }));
    if (m.removals !== family.removals.n) {
      m.removals = family.removals.n;
      m.map = [];
    }
    const a = d.announced;
    for (let k = 0; k < a.index.length; k++) {
      const i = a.index[k] as number;
      m.prefix[i] = a.prefix[k] as string;
      m.tail[i] = a.tail[k] as string;
      m.map[i] = -1;
    }
    const map = m.map;
    for (let k = 0; k < d.index.length; k++) {
      const i = d.index[k] as number;
      const at = d.touched[k] as number;
      let x = map[i] ?? -1;
      if (x < 0) {
        const prefix = m.prefix[i];
        const tail = m.tail[i];
        if (prefix === undefined || tail === undefined) throw new Error(`${d.name}: a worker's series ${i} was never announced`);
        x = family.index(prefix, tail, at);
        // index() may have removed nothing but can grow the arrays: values/touched are read below.
        map[i] = family.isOverflow(x) ? -1 : x;
      }
      family.values[x] = (family.values[x] as number) + (d.values[k] as number);
      if ((family.touched[x] as number) < at) family.touched[x] = at;
    }
    return d.index.length;
  }
}
