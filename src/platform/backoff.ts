/** The plugin manager's retry delays: capped, jittered, doubling. */

export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  /** 0..1: the delay is scaled by a random factor in [1 - jitter, 1 + jitter]. */
  readonly jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 60_000, jitter: 0.2 };

/** The delay before attempt number `failures + 1`: initialMs doubling to maxMs, scaled by the jitter. */
export function backoffDelay(b: BackoffOptions, failures: number, random: () => number): number {
  const base = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(failures - 1, 30));
  return Math.max(0, Math.round(base * (1 + b.jitter * (2 * random() - 1))));
}
