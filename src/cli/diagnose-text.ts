/**
 * `retina-agent diagnose --format text`: the JSON report as readable text. Each section gets a
 * heading with its outcome and time; a list of flat objects becomes a table with one column per
 * field, an object becomes indented `key: value` lines, and a failed section shows its error.
 */
const MAX_CELL = 48;

const scalar = (v: unknown): string => {
  if (v === undefined || v === null) return '-';
  if (Array.isArray(v)) return v.length ? v.map(scalar).join(',') : '(none)';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
};

const isFlat = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => x === null || typeof x !== 'object' || (Array.isArray(x) && x.every((y) => typeof y !== 'object')));

/** A table of `rows` (flat objects), columns in first-seen order, cells cut at MAX_CELL characters. */
export function table(rows: readonly Record<string, unknown>[], indent = ''): string[] {
  const cols: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k) && r[k] !== undefined) cols.push(k);
  const cells = rows.map((r) => cols.map((c) => {
    const s = scalar(r[c]);
    return s.length > MAX_CELL ? s.slice(0, MAX_CELL - 1) + '…' : s;
  }));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] as string).length)));
  const line = (xs: readonly string[]): string => indent + xs.map((x, i) => x.padEnd(widths[i] as number)).join('  ').trimEnd();
  return [line(cols.map((c) => c.toUpperCase())), ...cells.map(line)];
}

function lines(v: unknown, indent: string): string[] {
  if (Array.isArray(v)) {
    if (v.length === 0) return [`${indent}(none)`];
    if (v.every(isFlat)) return table(v, indent);
    return v.flatMap((x, i) => [`${indent}[${i}]`, ...lines(x, indent + '  ')]);
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    // A map of flat records (the config's keys): one table, the map's key in the first column.
    if (entries.length > 1 && entries.every(([, x]) => isFlat(x))) return table(entries.map(([k, x]) => ({ key: k, ...(x as Record<string, unknown>) })), indent);
    return Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).flatMap(([k, x]) =>
      x !== null && typeof x === 'object' && !(Array.isArray(x) && x.every((y) => typeof y !== 'object')) ? [`${indent}${k}:`, ...lines(x, indent + '  ')] : [`${indent}${k}: ${scalar(x)}`]);
  }
  return [`${indent}${scalar(v)}`];
}

interface SectionLike {
  ok: boolean;
  tookMs: number;
  data?: unknown;
  error?: string;
  timedOut?: boolean;
}

export function renderText(report: Record<string, unknown>): string {
  const { sections, ...head } = report as { sections: Record<string, SectionLike> };
  const out = lines(head, '');
  for (const [name, s] of Object.entries(sections)) {
    out.push('', `== ${name} (${s.ok ? 'ok' : s.timedOut ? 'timed out' : 'failed'}, ${s.tookMs} ms) ==`);
    if (s.ok) out.push(...lines(s.data, '  '));
    else out.push(`  error: ${s.error ?? ''}`);
  }
  return out.join('\n') + '\n';
}
