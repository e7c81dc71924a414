/** Time, injected so reflectors, queues and leader election can be tested without waiting. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): Disposable;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return { [Symbol.dispose]: () => clearTimeout(t) };
  },
};

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      t[Symbol.dispose]();
      resolve();
    };
    const t = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Capped exponential backoff with jitter: initial * 2^n, at most max, times a factor in [0.5, 1.5). */
export class Backoff {
  #failures = 0;
  constructor(
    readonly initialMs: number,
    readonly maxMs: number,
    readonly random: () => number = Math.random,
  ) {}
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.#failures, 30));
    this.#failures++;
    return Math.round(Math.min(this.maxMs, base * (0.5 + this.random())));
  }
  reset(): void {
    this.#failures = 0;
  }
  get failures(): number {
    return this.#failures;
  }
}
