/**
 * A keyed, deduplicating, rate-limited work queue (client-go's semantics). A key waiting in the queue
 * is not queued twice; a key being processed is held by one worker, and if it is added meanwhile it is
 * processed again once `done`. `addRateLimited` delays a key by its own exponential backoff and by a
 * global token bucket, whichever is longer; `forget` resets the key's backoff after a success.
 *
 * Two lanes, as controller-runtime's priority queue has: a key added 'low' (a resync, the pass over
 * every object a new leader makes) is handed out only when no 'high' key (a change) waits, and adding
 * a waiting low key again as high moves it up. At 100 000 objects a full pass takes seconds; without
 * the lanes every change that arrives meanwhile waits behind it.
 */
import { systemClock, type Clock } from './clock.js';

export interface WorkQueueMetrics {
  depth?(n: number): void;
  added?(): void;
  retried?(): void;
  /** Seconds a key waited in the queue before a worker took it. */
  queueLatency?(seconds: number): void;
}

export interface WorkQueueOptions {
  /** Per-key backoff: base * 2^failures, capped. */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Global bucket: `qps` tokens a second, at most `burst` saved up. */
  readonly qps?: number;
  readonly burst?: number;
  readonly clock?: Clock;
  readonly metrics?: WorkQueueMetrics;
}

export class TokenBucket {
  #tokens: number;
  #last: number;
  constructor(
    readonly qps: number,
    readonly burst: number,
    readonly clock: Clock = systemClock,
  ) {
    this.#tokens = burst;
    this.#last = clock.now();
  }
  /** Takes a token and returns how long to wait before using it (0 when one was saved up). */
  reserve(): number {
    const now = this.clock.now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
    this.#last = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens / this.qps) * 1000);
  }
}

export type Priority = 'high' | 'low';

/** One lane's keys in order; an entry whose key moved lanes or was taken meanwhile is skipped. */
class Lane {
  keys: string[] = [];
  head = 0;
  push(key: string): void {
    this.keys.push(key);
  }
  shift(): string | undefined {
    if (this.head >= this.keys.length) return undefined;
    const key = this.keys[this.head++] as string;
    if (this.head > 1024 && this.head * 2 > this.keys.length) {
      this.keys.splice(0, this.head);
      this.head = 0;
    }
    return key;
  }
}

export class WorkQueue {
  readonly #lanes: Record<Priority, Lane> = { high: new Lane(), low: new Lane() };
  /** Keys queued or added while processing, by lane. */
  readonly #dirty = new Map<string, Priority>();
  /** Keys waiting in a lane (dirty and not processing). */
  #queued = 0;
  readonly #processing = new Set<string>();
  readonly #addedAt = new Map<string, number>();
  readonly #waiting = new Map<string, { at: number; timer: Disposable }>();
  readonly #failures = new Map<string, number>();
  readonly #getters: ((key: string | undefined) => void)[] = [];
  readonly #bucket: TokenBucket;
  readonly #clock: Clock;
  readonly #o: WorkQueueOptions;
  #shutdown = false;

  constructor(o: WorkQueueOptions = {}) {
    this.#o = o;
    this.#clock = o.clock ?? systemClock;
    this.#bucket = new TokenBucket(o.qps ?? 50, o.burst ?? 100, this.#clock);
  }

  get length(): number {
    return this.#queued;
  }
  get shuttingDown(): boolean {
    return this.#shutdown;
  }
  /** Keys queued, waiting for a retry, or being processed. */
  get pending(): number {
    return this.length + this.#waiting.size + this.#processing.size;
  }

  /** Queues `key` (once: a waiting key is not queued twice); 'high' moves a waiting 'low' key up. */
  add(key: string, priority: Priority = 'high'): void {
    if (this.#shutdown) return;
    const was = this.#dirty.get(key);
    if (was !== undefined) {
      if (was === 'low' && priority === 'high') {
        this.#dirty.set(key, 'high');
        // Waiting in the low lane: queued again in the high one (the low entry is skipped later).
        if (!this.#processing.has(key)) this.#lanes.high.push(key);
      }
      return;
    }
    this.#dirty.set(key, priority);
    this.#o.metrics?.added?.();
    if (this.#processing.has(key)) return;
    this.#push(key);
  }

  /** Adds `key` after `delayMs`; a key already waiting keeps the earlier time. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shutdown) return;
    if (delayMs <= 0) return this.add(key);
    const at = this.#clock.now() + delayMs;
    const w = this.#waiting.get(key);
    if (w && w.at <= at) return;
    w?.timer[Symbol.dispose]();
    const timer = this.#clock.setTimeout(() => {
      this.#waiting.delete(key);
      this.add(key);
    }, delayMs);
    this.#waiting.set(key, { at, timer });
  }

  /** Retries `key` later: its own backoff or the global bucket, whichever is longer. */
  addRateLimited(key: string): void {
    const n = this.#failures.get(key) ?? 0;
    this.#failures.set(key, n + 1);
    const own = Math.min(this.#o.maxDelayMs ?? 300_000, (this.#o.baseDelayMs ?? 5) * 2 ** Math.min(n, 40));
    this.#o.metrics?.retried?.();
    this.addAfter(key, Math.max(own, this.#bucket.reserve()));
  }

  /** Forgets the key's failures (after a success). */
  forget(key: string): void {
    this.#failures.delete(key);
  }
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** The next key (held until `done`), or undefined once the queue shuts down. */
  get(): Promise<string | undefined> {
    if (this.#queued > 0) return Promise.resolve(this.#take());
    if (this.#shutdown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key)) this.#push(key);
  }

  /** The lane a waiting key is in; undefined when it is not waiting (absent, or being processed and not added since). */
  lane(key: string): Priority | undefined {
    return this.#processing.has(key) ? undefined : this.#dirty.get(key);
  }

  /** Keys waiting in the low lane (a pass not yet done). */
  get lowLength(): number {
    let n = 0;
    for (const [k, p] of this.#dirty) if (p === 'low' && !this.#processing.has(k)) n++;
    return n;
  }

  shutdown(): void {
    this.#shutdown = true;
    for (const w of this.#waiting.values()) w.timer[Symbol.dispose]();
    this.#waiting.clear();
    for (const g of this.#getters.splice(0)) g(undefined);
  }

  #push(key: string): void {
    this.#addedAt.set(key, this.#clock.now());
    const g = this.#getters.shift();
    if (g) {
      g(this.#claim(key));
      return;
    }
    this.#lanes[this.#dirty.get(key) ?? 'high'].push(key);
    this.#queued++;
    this.#o.metrics?.depth?.(this.#queued);
  }

  #take(): string {
    for (const p of ['high', 'low'] as const) {
      for (let key = this.#lanes[p].shift(); key !== undefined; key = this.#lanes[p].shift()) {
        // Live only while still queued in this lane: not taken, not moved up.
        if (this.#dirty.get(key) !== p || this.#processing.has(key)) continue;
        this.#queued--;
        this.#o.metrics?.depth?.(this.#queued);
        return this.#claim(key);
      }
    }
    throw new Error('work queue: no key although the count says one waits');
  }

  #claim(key: string): string {
    this.#dirty.delete(key);
    this.#processing.add(key);
    const at = this.#addedAt.get(key);
    this.#addedAt.delete(key);
    if (at !== undefined) this.#o.metrics?.queueLatency?.((this.#clock.now() - at) / 1000);
    return key;
  }
}
