/**
 * The reflector's store: slim objects by key, with their resourceVersion, and the handlers told about
 * each change. A handler's exception stays with that handler.
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
  rv: string;
  value: S;
}

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

export class NotifyingStore<S> {
  readonly items = new Map<string, Entry<S>>();
  readonly #handlers = new Set<ReflectorHandler<S>>();
  synced = false;

  constructor(
    readonly name: string,
    readonly equal: (a: S, b: S) => boolean = sameJson,
    readonly log?: Logger,
  ) {}

  subscribe(h: ReflectorHandler<S>, replay: boolean): Disposable {
    this.#handlers.add(h);
    if (replay) {
      for (const [k, e] of this.items) h.added?.(k, e.value);
      if (this.synced) h.synced?.();
    }
    return { [Symbol.dispose]: () => void this.#handlers.delete(h) };
  }

  /** Stores `e`; an unchanged resourceVersion or an equal slim value notifies no one. */
  upsert(key: string, e: Entry<S>): void {
    const old = this.items.get(key);
    if (old && old.rv === e.rv && e.rv !== '') return;
    this.items.set(key, e);
    if (!old) {
      for (const h of [...this.#handlers]) this.#call(() => h.added?.(key, e.value));
      return;
    }
    if (this.equal(old.value, e.value)) return;
    for (const h of [...this.#handlers]) this.#call(() => h.updated?.(key, e.value, old.value));
  }

  delete(key: string): void {
    const old = this.items.get(key);
    if (!old) return;
    this.items.delete(key);
    for (const h of [...this.#handlers]) this.#call(() => h.deleted?.(key, old.value));
  }

  /** Deletes every key not in `keep` (after a list or a stream's initial events). */
  retainOnly(keep: { has(key: string): boolean }): void {
    for (const k of [...this.items.keys()]) if (!keep.has(k)) this.delete(k);
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
