/** Least-squares trend of a time series, for the soak's memory slopes. */
export interface Trend {
  /** Units per minute. */
  readonly slopePerMinute: number;
  /** Standard error of the slope (units per minute); NaN with fewer than three points. */
  readonly stdErrPerMinute: number;
  readonly n: number;
}

/** Ordinary least squares of `y` on `t` (`t` in ms). Throws with fewer than two distinct times. */
export function trend(points: readonly (readonly [tMs: number, y: number])[]): Trend {
  const n = points.length;
  const ts = points.map(([t]) => t / 60_000);
  const ys = points.map(([, y]) => y);
  const mt = ts.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    sxx += ((ts[i] as number) - mt) ** 2;
    sxy += ((ts[i] as number) - mt) * ((ys[i] as number) - my);
  }
  if (!(sxx > 0)) throw new Error(`a trend needs samples at two different times, got ${n}`);
  const slope = sxy / sxx;
  let sse = 0;
  for (let i = 0; i < n; i++) sse += ((ys[i] as number) - my - slope * ((ts[i] as number) - mt)) ** 2;
  return { slopePerMinute: slope, stdErrPerMinute: n > 2 ? Math.sqrt(sse / (n - 2) / sxx) : NaN, n };
}
