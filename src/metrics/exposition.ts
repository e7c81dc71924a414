/**
 * Prometheus text exposition (format 0.0.4) of a prom-client Registry, byte-for-byte what
 * `registry.metrics()` writes, at about half the cost: prom-client builds a fresh "shared labels"
 * object per series and then fails to cache its flattening, which at 10 000 series is most of a
 * scrape (measured in bench/server/scrape.bench.ts). A test checks the two outputs are identical.
 */
import type { Registry } from 'prom-client';

interface Value {
  readonly value: number;
  readonly labels?: Readonly<Record<string, string | number | undefined>>;
  readonly metricName?: string;
}

interface MetricLike {
  /** A family that writes its own block (series.ts: its series lines are kept between scrapes). */
  exposition?(): string;
  get(): Promise<{ name: string; help: string; type: string; values?: readonly Value[] }> | { name: string; help: string; type: string; values?: readonly Value[] };
}

const NEEDS_ESCAPE = /[\\\n"]/;

export function escapeHelp(s: string): string {
  return s.includes('\\') || s.includes('\n') ? s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : s;
}

export function escapeLabel(v: string | number | undefined): string {
  if (typeof v !== 'string') return String(v);
  return NEEDS_ESCAPE.test(v) ? v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"') : v;
}

export function valueText(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (!Number.isFinite(v)) return v < 0 ? '-Inf' : '+Inf';
  return `${v}`;
}

export async function formatExposition(registry: Registry): Promise<string> {
  const metrics = registry.getMetricsAsArray() as unknown as MetricLike[];
  const blocks = await Promise.all(metrics.map(async (m) => {
    if (m.exposition) return m.exposition();
    const { name, help, type, values } = await m.get();
    const escName = escapeHelp(name);
    let out = `# HELP ${escName} ${escapeHelp(help)}\n# TYPE ${escName} ${type}`;
    for (const v of values ?? []) {
      out += '\n' + (v.metricName ?? escName);
      const labels = v.labels;
      if (labels) {
        let first = true;
        for (const k in labels) {
          out += (first ? '{' : ',') + k + '="' + escapeLabel(labels[k]) + '"';
          first = false;
        }
        if (!first) out += '}';
      }
      out += ' ' + valueText(v.value);
    }
    return out;
  }));
  return blocks.join('\n\n') + '\n';
}
