/**
 * The reflector's store: slim objects by key, with their resourceVersion, and the handlers told about
 * each change. A handler's exception stays with that handler.
 *
 * Entries sit in a map per namespace keyed by the object's own name string (the one its slim value
 * keeps too), not under a joined "namespace/name" key: at 20 000 RetinaEndpoints a joined key is a
 * cons string plus its flattened copy (about 90 bytes each, 1.8 MB in all) that nothing else needs.
 * Keys are joined only on the way out (handlers, keys()). A numeric resourceVersion (etcd's revision,
 * what every API server sends today) is kept as a number: no string per entry.
 */
import type { Logger } from '../log/index.js';

export interface ReflectorHandler<S> {
  added?(key: string, obj: S): void;
  updated?(key: string, obj: S, old: S): void;
  deleted?(key: string, old: S): void;
  /** The first complete list has been applied. */
  synced?(): void;
}

export interface Entry<S> {
  /** The object's resourceVersion: a number when it is a plain decimal that round-trips, else as sent. */
  rv: string | number;
  value: S;
}

/** `rv` as a number when it is a decimal integer that reads back the same (no leading zero, under 2^53). */
export function compactRv(rv: string | undefined): string | number {
  if (!rv || rv.length > 15 || !/^(0|[1-9][0-9]*)$/.test(rv)) return rv ?? '';
  return Number(rv);
}

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** A key's namespace ('' when cluster-scoped) and name: names and namespaces never hold '/'. */
export function splitStoreKey(key: string): [namespace: string, name: string] {
  const i = key.indexOf('/');
  return i < 0 ? ['', key] : [key.slice(0, i), key.slice(i + 1)];
}

const joinKey = (namespace: string, name: string): string => (namespace ? `${namespace}/${name}` : name);

export class NotifyingStore<S> {
  readonly #byNs = new Map<string, Map<string, Entry<S>>>();
  readonly #handlers = new Set<ReflectorHandler<S>>();
  #size = 0;
  synced = false;

  constructor(
    readonly name: string,
    readonly equal: (a: S, b: S) => boolean = sameJson,
    readonly log?: Logger,
  ) {}

  get size(): number {
    return this.#size;
  }

  get(key: string): Entry<S> | undefined {
    const [ns, name] = splitStoreKey(key);
    return this.#byNs.get(ns)?.get(name);
  }

  /** Every entry with its key ("namespace/name", or the name when cluster-scoped). */
  *entries(): IterableIterator<[string, Entry<S>]> {
    for (const [ns, m] of this.#byNs) for (const [name, e] of m) yield [joinKey(ns, name), e];
  }

  *values(): IterableIterator<Entry<S>> {
    for (const m of this.#byNs.values()) yield* m.values();
  }

  keys(): string[] {
    const out: string[] = [];
    for (const [ns, m] of this.#byNs) for (const name of m.keys()) out.push(joinKey(ns, name));
    return out;
  }

  subscribe(h: ReflectorHandler<S>, replay: boolean): Disposable {
    this.#handlers.add(h);
    if (replay) {
      for (const [k, e] of this.entries()) h.added?.(k, e.value);
      if (this.synced) h.synced?.();
    }
    return { [Symbol.dispose]: () => void this.#handlers.delete(h) };
  }

  /**
   * Stores `e` under `key`; an unchanged resourceVersion or an equal slim value notifies no one.
   * `name` is the object's own name string (the key's name part), kept as the map's key; without it
   * the name is cut from `key` (a slice that would keep the joined key alive).
   */
  upsert(key: string, e: Entry<S>, name?: string): void {
    const [ns, cut] = splitStoreKey(key);
    let m = this.#byNs.get(ns);
    const old = m?.get(cut);
    if (old && old.rv === e.rv && e.rv !== '') return;
    if (!m) this.#byNs.set(ns, (m = new Map()));
    m.set(name === cut ? name : cut, e);
    if (!old) {
      this.#size++;
      for (const h of [...this.#handlers]) this.#call(() => h.added?.(key, e.value));
      return;
    }
    if (this.equal(old.value, e.value)) return;
    for (const h of [...this.#handlers]) this.#call(() => h.updated?.(key, e.value, old.value));
  }

  delete(key: string): void {
    const [ns, name] = splitStoreKey(key);
    const m = this.#byNs.get(ns);
    const old = m?.get(name);
    if (!m || !old) return;
    m.delete(name);
    if (!m.size) this.#byNs.delete(ns);
    this.#size--;
    for (const h of [...this.#handlers]) this.#call(() => h.deleted?.(key, old.value));
  }

  /** Deletes every key not in `keep` (after a list or a stream's initial events). */
  retainOnly(keep: { has(key: string): boolean }): void {
    for (const k of this.keys()) if (!keep.has(k)) this.delete(k);
  }

  markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const h of [...this.#handlers]) this.#call(() => h.synced?.());
  }

  #call(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log?.error('reflector handler failed', { resource: this.name, error: (e as Error).message });
    }
  }
}
