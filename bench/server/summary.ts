/** Order statistics for benchmark samples (nearest rank), rounded for one-line JSON reports. */
export interface Summary {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly min: number;
  readonly mean: number;
}

export function summarize(values: readonly number[], digits = 3): Summary {
  if (values.length === 0) throw new Error('no samples');
  const s = [...values].sort((a, b) => a - b);
  const rank = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] as number;
  const r = (v: number) => Number(v.toFixed(digits));
  return { n: s.length, p50: r(rank(0.5)), p99: r(rank(0.99)), max: r(s[s.length - 1] as number), min: r(s[0] as number), mean: r(s.reduce((a, b) => a + b, 0) / s.length) };
}

/** A positive integer from the environment, or `def`. */
export function envInt(name: string, def: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}
