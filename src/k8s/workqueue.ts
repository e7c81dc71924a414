/**
 * A keyed, deduplicating, rate-limited work queue (client-go's semantics). A key waiting in the queue
 * is not queued twice; a key being processed is held by one worker, and if it is added meanwhile it is
 * processed again once `done`. `addRateLimited` delays a key by its own exponential backoff and by a
 * global token bucket, whichever is longer; `forget` resets the key's backoff after a success.
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

export class WorkQueue {
  readonly #queue: string[] = [];
  #head = 0;
  readonly #dirty = new Set<string>();
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
    return this.#queue.length - this.#head;
  }
  get shuttingDown(): boolean {
    return this.#shutdown;
  }
  /** Keys queued, waiting for a retry, or being processed. */
  get pending(): number {
    return this.length + this.#waiting.size + this.#processing.size;
  }

  add(key: string): void {
    if (this.#shutdown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
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
    if (this.length > 0) return Promise.resolve(this.#take());
    if (this.#shutdown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key)) this.#push(key);
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
    this.#queue.push(key);
    this.#o.metrics?.depth?.(this.length);
  }

  #take(): string {
    const key = this.#queue[this.#head++] as string;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    this.#o.metrics?.depth?.(this.length);
    return this.#claim(key);
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
