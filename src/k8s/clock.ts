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
