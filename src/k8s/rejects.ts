/**
 * What a reflector could not take in: objects its transform threw on, objects without a name, and
 * LIST pages or watch events over the size caps. `Intake` slims each object on its own, so one bad
 * object costs only itself; every rejection is counted (onRejected) and logged by `RejectLog`, at
 * most once per interval per resource: the first at once, the rest of the interval as one line with
 * their count and the last object and error seen.
 */
import type { Clock } from './clock.js';
import type { Logger } from '../log/index.js';
import { keyOf, type KubeObject } from './resources.js';

export type RejectReason = 'transform' | 'malformed' | 'list_page_too_large' | 'watch_event_too_large';

export class RejectLog implements Disposable {
  #last = -Infinity;
  #pending = 0;
  #latest: { object: string; reason: RejectReason; error: string } | undefined;
  #timer: Disposable | undefined;

  constructor(
    readonly resource: string,
    readonly clock: Clock,
    readonly log: Logger | undefined,
    readonly intervalMs = 60_000,
  ) {}

  /** One rejection: `object` is namespace/name (or what is known of it). */
  note(object: string, reason: RejectReason, error: string): void {
    const now = this.clock.now();
    if (now - this.#last >= this.intervalMs && this.#pending === 0) {
      this.#last = now;
      this.#write(1, { object, reason, error });
      return;
    }
    this.#pending++;
    this.#latest = { object, reason, error };
    this.#timer ??= this.clock.setTimeout(() => this.#flush(), Math.max(0, this.#last + this.intervalMs - now));
  }

  #flush(): void {
    this.#timer = undefined;
    if (!this.#pending || !this.#latest) return;
    this.#last = this.clock.now();
    this.#write(this.#pending, this.#latest);
    this.#pending = 0;
    this.#latest = undefined;
  }

  #write(count: number, x: { object: string; reason: RejectReason; error: string }): void {
    this.log?.warn('objects rejected and skipped', { resource: this.resource, count, intervalMs: this.intervalMs, ...x });
  }

  [Symbol.dispose](): void {
    this.#timer?.[Symbol.dispose]();
    this.#flush();
  }
}

/** Keys and slims objects one by one for a reflector, counting and logging what it rejects. */
export class Intake<T extends KubeObject, S> implements Disposable {
  rejected = 0;
  readonly #log: RejectLog;

  constructor(
    readonly resource: string,
    readonly transform: (o: T) => S | undefined,
    clock: Clock,
    log: Logger | undefined,
    readonly onRejected?: (reason: RejectReason, resource: string) => void,
    intervalMs?: number,
  ) {
    this.#log = new RejectLog(resource, clock, log, intervalMs);
  }

  /**
   * The key and slim value of `o`. A transform that throws counts as "not kept" (value undefined: the
   * store drops any older version); an object without a name cannot be keyed (undefined). Both are
   * counted and logged, and the caller goes on with the next object.
   */
  take(o: T): { key: string; value: S | undefined } | undefined {
    if (typeof o?.metadata?.name !== 'string' || !o.metadata.name) {
      this.reject(`${o?.metadata?.namespace ?? '?'}/?`, 'malformed', 'metadata.name is missing');
      return undefined;
    }
    const key = keyOf(o);
    try {
      return { key, value: this.transform(o) };
    } catch (e) {
      this.reject(key, 'transform', e instanceof Error ? e.message : String(e));
      return { key, value: undefined };
    }
  }

  reject(object: string, reason: RejectReason, error: string): void {
    this.rejected++;
    this.#log.note(object, reason, error);
    try {
      this.onRejected?.(reason, this.resource);
    } catch {
      // counting must never break the loop
    }
  }

  [Symbol.dispose](): void {
    this.#log[Symbol.dispose]();
  }
}
