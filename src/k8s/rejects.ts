/**
 * What a reflector could not take in: objects its transform threw on, objects without a name, and
 * LIST pages or watch events over the size caps. Each is counted by the caller (onRejected); the log
 * says it at most once per interval per resource: the first at once, the rest of the interval as one
 * line with their count and the last object and error seen.
 */
import type { Clock } from './clock.js';
import type { Logger } from '../log/index.js';

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
