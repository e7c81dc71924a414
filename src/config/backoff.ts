/**
 * The one retry backoff of the agent and the operator (Kubernetes reflectors, the plugin manager):
 * capped exponential delays with jitter. It lives in src/config because that is the lowest floor
 * both src/k8s and src/platform may import (STYLE.md layer table); it is plain arithmetic, no I/O.
 */

export interface BackoffOptions {
  readonly initialMs: number;
  /** No delay is longer, jitter included. */
  readonly maxMs: number;
  /** 0..1: the delay is scaled by a random factor in [1 - jitter, 1 + jitter), then capped at maxMs. */
  readonly jitter: number;
}

/** The delay before attempt number `failures + 1` (failures ≥ 1): initialMs doubling to maxMs, scaled by the jitter. */
export function backoffDelay(b: BackoffOptions, failures: number, random: () => number = Math.random): number {
  const base = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(Math.max(failures, 1) - 1, 30));
  return Math.max(0, Math.round(Math.min(b.maxMs, base * (1 + b.jitter * (2 * random() - 1)))));
}

/** backoffDelay with the failure count kept: `next()` after each failure, `reset()` after a success. */
export class Backoff {
  #failures = 0;
  constructor(
    readonly options: BackoffOptions,
    readonly random: () => number = Math.random,
  ) {}
  next(): number {
    this.#failures++;
    return backoffDelay(this.options, this.#failures, this.random);
  }
  reset(): void {
    this.#failures = 0;
  }
  get failures(): number {
    return this.#failures;
  }
}
