/** Go `time.ParseDuration` syntax, the one Retina's YAML uses: `300ms`, `10s`, `1h2m3.5s`. */
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDurationMs(text: string): number | undefined {
  const s = text.trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let pos = 0;
  let matched = false;
  for (;;) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) break;
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    pos = re.lastIndex;
    matched = true;
  }
  if (!matched || pos !== s.length || !Number.isFinite(total)) return undefined;
  return Math.round(total);
}

export function formatDurationMs(ms: number): string {
  if (ms === 0) return '0s';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
