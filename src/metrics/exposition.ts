/**
 * Prometheus text exposition (format 0.0.4) of a prom-client Registry, byte-for-byte what
 * `registry.metrics()` writes, at a fraction of the cost and without the body as one JS string:
 *   - prom-client builds a fresh "shared labels" object per series and then fails to cache its
 *     flattening, which at 10 000 series is most of a scrape (bench/server/scrape.bench.ts);
 *   - the text goes into a Body (UTF-8 bytes in a buffer kept between scrapes, written from pieces
 *     of at most FLUSH_CHARS characters), so a scrape allocates no body-sized string: at pod level
 *     (740 kB for 3 300 series) that string went to V8's large-object space every scrape, and
 *     flattening it (string += string) was most of the scrape's time (bench/agent/scraped.bench.ts);
 *   - between families it lets other callbacks run (ring drains, probes) once it has held the
 *     event loop for EXPOSITION_SLICE_MS, so neither a scrape nor a drain waits long on the other.
 * A test checks the output is identical to prom-client's.
 */
import type { Registry } from 'prom-client';

interface Value {
  readonly value: number;
  readonly labels?: Readonly<Record<string, string | number | undefined>>;
  readonly metricName?: string;
}

/** Where exposition text goes: pieces in order. */
export interface TextSink {
  push(s: string): void;
}

interface MetricLike {
  /** A family that writes its own block (series.ts). */
  writeExposition?(out: TextSink): void;
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

/** Most time (ms) one exposition holds the event loop before it lets other callbacks run. */
export const EXPOSITION_SLICE_MS = 5;
/** Characters gathered before they are encoded into the body (short-lived strings, young generation only). */
const FLUSH_CHARS = 16_384;
/** Bodies kept between scrapes are shrunk back when the last one used less than a quarter. */
const MIN_CAPACITY = 16_384;

/**
 * Exposition bytes in a buffer reused from scrape to scrape (grown by doubling, shrunk when a body
 * needed less than a quarter of it). `bytes()` is valid until the next `reset()`.
 */
export class Body implements TextSink {
  #buf: Buffer;
  #len = 0;
  #pending = '';

  constructor(capacity = MIN_CAPACITY) {
    this.#buf = Buffer.allocUnsafe(capacity);
  }

  get capacity(): number {
    return this.#buf.length;
  }

  reset(): void {
    // A body much smaller than the buffer gives the memory back (halving, so a swinging size does not thrash).
    if (this.#len < this.#buf.length / 4 && this.#buf.length > MIN_CAPACITY) this.#buf = Buffer.allocUnsafe(Math.max(MIN_CAPACITY, this.#buf.length / 2));
    this.#len = 0;
    this.#pending = '';
  }

  push(s: string): void {
    this.#pending += s;
    if (this.#pending.length >= FLUSH_CHARS) this.#flush();
  }

  #flush(): void {
    const s = this.#pending;
    this.#pending = '';
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (this.#len + s.length * 3 > this.#buf.length) {
      const need = this.#len + Buffer.byteLength(s);
      if (need > this.#buf.length) {
        let n = this.#buf.length * 2;
        while (n < need) n *= 2;
        const grown = Buffer.allocUnsafe(n);
        this.#buf.copy(grown, 0, 0, this.#len);
        this.#buf = grown;
      }
    }
    this.#len += this.#buf.write(s, this.#len, 'utf8');
  }

  /** The body so far (a view of the buffer: valid until the next reset). */
  bytes(): Buffer {
    if (this.#pending) this.#flush();
    return this.#buf.subarray(0, this.#len);
  }
}

function writeValues(out: TextSink, { name, help, type, values }: { name: string; help: string; type: string; values?: readonly Value[] }): void {
  const escName = escapeHelp(name);
  out.push(`# HELP ${escName} ${escapeHelp(help)}\n# TYPE ${escName} ${type}`);
  for (const v of values ?? []) {
    let line = '\n' + (v.metricName ?? escName);
    const labels = v.labels;
    if (labels) {
      let first = true;
      for (const k in labels) {
        line += (first ? '{' : ',') + k + '="' + escapeLabel(labels[k]) + '"';
        first = false;
      }
      if (!first) line += '}';
    }
    out.push(line + ' ' + valueText(v.value));
  }
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Writes the registry's exposition to `out`, yielding to the event loop every `sliceMs` of work (between families). */
export async function writeExposition(registry: Registry, out: TextSink, sliceMs = EXPOSITION_SLICE_MS): Promise<void> {
  const metrics = registry.getMetricsAsArray() as unknown as MetricLike[];
  let since = performance.now();
  for (let i = 0; i < metrics.length; i++) {
    const m = metrics[i] as MetricLike;
    if (i > 0) out.push('\n\n');
    if (m.writeExposition) m.writeExposition(out);
    else writeValues(out, await m.get());
    if (performance.now() - since >= sliceMs) {
      await turn();
      since = performance.now();
    }
  }
  out.push('\n');
}

/** The exposition as one string (tests, and callers that want text). */
export async function formatExposition(registry: Registry): Promise<string> {
  const parts: string[] = [];
  await writeExposition(registry, { push: (s) => parts.push(s) });
  return parts.join('');
}
