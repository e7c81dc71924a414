/**
 * ResourceStack: every acquire has its release. Resources are released once, in reverse order; a
 * failing release does not stop the others, and all failures are thrown together at the end.
 */

type Releasable = Disposable | AsyncDisposable;

let live = 0;
/** Stacks built and not yet disposed, for leak checks in tests. */
export function liveResourceStacks(): number {
  return live;
}

export class ResourceStack implements AsyncDisposable {
  #releases: (() => unknown)[] = [];
  #disposed = false;
  #disposing: Promise<void> | undefined;

  constructor() {
    live++;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Remembers how to release `r`; a stack already disposed releases it at once. */
  use<T extends Releasable>(r: T): T {
    const release = Symbol.asyncDispose in r ? () => (r as AsyncDisposable)[Symbol.asyncDispose]() : () => (r as Disposable)[Symbol.dispose]();
    this.defer(release);
    return r;
  }

  /** Registers a release step (clearInterval, close fd, unregister callback...). */
  defer(fn: () => unknown): void {
    if (this.#disposed) {
      void Promise.resolve().then(fn).catch(() => undefined);
      return;
    }
    this.#releases.push(fn);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#disposing) return this.#disposing;
    this.#disposed = true;
    live--;
    this.#disposing = (async () => {
      const errors: unknown[] = [];
      while (this.#releases.length) {
        const fn = this.#releases.pop() as () => unknown;
        try {
          await fn();
        } catch (e) {
          errors.push(e);
        }
      }
      if (errors.length === 1) throw errors[0];
      if (errors.length > 1) throw new AggregateError(errors, `${errors.length} resources failed to release`);
    })();
    return this.#disposing;
  }

  /**
   * Builds a stack whose ownership passes to the caller; if `fill` throws, everything it acquired
   * is released before the error propagates.
   */
  static async build(fill: (s: ResourceStack) => Promise<void> | void): Promise<ResourceStack> {
    const s = new ResourceStack();
    try {
      await fill(s);
      return s;
    } catch (e) {
      try {
        await s[Symbol.asyncDispose]();
      } catch (releaseErr) {
        throw new Error(`${(e as Error).message} (and releasing what was acquired failed: ${(releaseErr as Error).message})`, { cause: e });
      }
      throw e;
    }
  }
}

/** A timer that is released with its stack. */
export function every(stack: ResourceStack, intervalMs: number, fn: () => void): void {
  const t = setInterval(fn, intervalMs);
  t.unref?.();
  stack.defer(() => clearInterval(t));
}

/**
 * Runs `run` now (awaited, so a plugin's first reading is settled when start returns) and then every
 * `intervalMs`, never two runs at once. Released with the stack: no new run starts, `signal` is
 * aborted, and the release waits for the run in flight. An error thrown by `run` goes to `onError`
 * (unless stopping), never to the timer.
 */
export async function poll(
  stack: ResourceStack,
  intervalMs: number,
  run: (signal: AbortSignal) => Promise<void>,
  onError: (err: unknown) => void,
): Promise<void> {
  const abort = new AbortController();
  let inFlight: Promise<void> | undefined;
  const tick = (): Promise<void> => {
    if (abort.signal.aborted) return Promise.resolve();
    inFlight ??= run(abort.signal)
      .catch((e: unknown) => {
        if (!abort.signal.aborted) onError(e);
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
  stack.defer(async () => {
    abort.abort();
    await inFlight;
  });
  await tick();
  every(stack, intervalMs, () => void tick());
}
