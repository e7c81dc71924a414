/**
 * One prom-client Registry per process (never the global default), and typed writers over it.
 * Families are created on first use from their catalog definition, so a family no plugin writes
 * does not appear, and a restarted plugin finds its family again.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from './prom.js';
import type { MetricDef } from './catalog.js';
import { EVENT_LOOP_LAG_STATS, registerEventLoopLag } from './event-loop.js';
import { Body, formatExposition, writeExposition } from './exposition.js';

const PROCESS_START_TIME = 'process_start_time_seconds';

export type Labels<L extends string> = Partial<Record<L, string | number>>;

export interface MetricWriters {
  gauge<L extends string>(def: MetricDef<L>): Gauge<L>;
  counter<L extends string>(def: MetricDef<L>): Counter<L>;
  histogram<L extends string>(def: MetricDef<L>): Histogram<L>;
  /** Removes every series of these families (a stopped plugin leaves no stale values). */
  reset(defs: readonly MetricDef[]): void;
  /** Unregisters these families altogether (a writer asked for later starts afresh). */
  remove(defs: readonly MetricDef[]): void;
}

/** A family that builds its own values at scrape time (see series.ts). */
export interface CustomFamily {
  readonly name: string;
  get(): unknown;
}

export interface MetricsRegistry extends MetricWriters {
  readonly registry: Registry;
  /** Exposes a custom family; a family of the same name is replaced. */
  attach(family: CustomFamily): void;
  detach(name: string): void;
  /** Text exposition, as a string (tests, the operator's callers that read it). */
  expose(): Promise<{ contentType: string; body: string }>;
  /**
   * The exposition as UTF-8 bytes for GET /metrics, in a buffer that the next scrape reuses once
   * `release()` was called (when the response is written); a scrape that comes before gets its own.
   */
  exposeBody(): Promise<ExposedBody>;
}

export interface ExposedBody {
  readonly contentType: string;
  readonly body: Uint8Array;
  /** The body's buffer may be reused: call once the response no longer needs it (never, if unsure). */
  release(): void;
}

/** How often the nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds monitor samples, by default. */
export const EVENT_LOOP_SAMPLE_MS = 10_000;

export interface RegistryOptions {
  /** Node.js process metrics (prom-client's default metrics); default true. */
  readonly processMetrics?: boolean;
  /**
   * Sampling period of the event-loop delay monitor, in ms (default EVENT_LOOP_SAMPLE_MS). Each
   * sample is a timer wake-up: prom-client's own 10 ms woke an idle agent 100 times a second.
   * nodejs_eventloop_lag_seconds is measured at each scrape, whatever this is.
   */
  readonly eventLoopSampleMs?: number;
}

export function createMetricsRegistry(opts: RegistryOptions = {}): MetricsRegistry {
  const registry = new Registry();
  if (opts.processMetrics ?? true) {
    // prom-client's event-loop delay monitor cannot be left out: it samples once in 24 days, and its
    // gauges are replaced by ours (event-loop.ts), which sample every eventLoopSampleMs.
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 2 ** 31 - 1 });
    // Gauges named `_total` (promtool rejects them); nodejs_active_{handles,requests,resources} carry the same counts.
    for (const n of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total', ...EVENT_LOOP_LAG_STATS, PROCESS_START_TIME]) {
      registry.removeSingleMetric(n);
    }
    // prom-client computes the start time once, when its module is evaluated: in the agent's start-up
    // snapshot (hack/bundle.mjs) that is when the snapshot was built. Ours is computed here, at run time.
    const start = Math.round(Date.now() / 1000 - process.uptime());
    new Gauge({ name: PROCESS_START_TIME, help: 'Start time of the process since unix epoch in seconds.', registers: [registry], aggregator: 'omit', collect() { this.set(start); } });
    registerEventLoopLag(registry, opts.eventLoopSampleMs ?? EVENT_LOOP_SAMPLE_MS);
  }
  const families = new Map<string, { def: MetricDef; metric: Gauge | Counter | Histogram }>();
  /** The exposition buffer kept between scrapes (none while a response still holds it). */
  let spare: Body | undefined;

  function get<M>(d: MetricDef, make: () => M): M {
    const hit = families.get(d.name);
    if (hit) {
      if (hit.def !== d && hit.def.type !== d.type) throw new Error(`metric ${d.name} requested as ${d.type} but registered as ${hit.def.type}`);
      return hit.metric as M;
    }
    const metric = make();
    families.set(d.name, { def: d, metric: metric as Gauge | Counter | Histogram });
    return metric;
  }
  const common = (d: MetricDef) => ({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] });
  return {
    registry,
    gauge: <L extends string>(d: MetricDef<L>) => get(d, () => new Gauge<L>(common(d) as never)),
    counter: <L extends string>(d: MetricDef<L>) => get(d, () => new Counter<L>(common(d) as never)),
    histogram: <L extends string>(d: MetricDef<L>) =>
      get(d, () => new Histogram<L>({ ...common(d), ...(d.buckets ? { buckets: [...d.buckets] } : {}) } as never)),
    reset(defs) {
      for (const d of defs) families.get(d.name)?.metric.reset();
    },
    remove(defs) {
      for (const d of defs) {
        families.delete(d.name);
        registry.removeSingleMetric(d.name);
      }
    },
    attach(family) {
      registry.removeSingleMetric(family.name);
      registry.registerMetric(family as never);
    },
    detach(name) {
      registry.removeSingleMetric(name);
    },
    async expose() {
      return { contentType: registry.contentType, body: await formatExposition(registry) };
    },
    async exposeBody() {
      const b = spare ?? new Body();
      spare = undefined;
      b.reset();
      try {
        await writeExposition(registry, b);
      } catch (e) {
        spare ??= b;
        throw e;
      }
      return { contentType: registry.contentType, body: b.bytes(), release: () => void (spare ??= b) };
    },
  };
}

/** What `replaceSeries` last wrote to a gauge: its series store, the label sets in order, and their values. */
interface Written {
  readonly store: unknown;
  readonly labels: Readonly<Record<string, string | number | undefined>>[];
  readonly values: number[];
}
const written = new WeakMap<object, Written>();

/** prom-client's series store of a gauge: `reset()` replaces it, so a new one means it was reset. */
const storeOf = (g: Gauge<string>): unknown => (g as unknown as { hashMap: unknown }).hashMap;

function sameLabels(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): boolean {
  let n = 0;
  for (const k in a) {
    if (a[k] !== b[k]) return false;
    n++;
  }
  for (const k in b) if (--n < 0 || !(k in a)) return false;
  return n === 0;
}

/** How many prom-client writes `replaceSeries` made (tests: an unchanged reading costs none). */
export const replaceSeriesWrites = { n: 0 };

/**
 * Replaces all series of a gauge with `rows` in one synchronous step (no scrape can see a half
 * state: the event loop does not interleave). Series absent from `rows` disappear. The gauge's
 * series are the caller's alone (nothing else writes to it but `reset()`).
 *
 * An interval's cost follows what changed: when the rows carry the same label sets in the same
 * order as last time (and the gauge was not reset since), only values that moved go to prom-client
 * (each `set` hashes its label set); otherwise the family is rebuilt, in the rows' order, so the
 * exposition is what a rebuild every time would give.
 */
export function replaceSeries<L extends string>(g: Gauge<L>, rows: Iterable<readonly [Labels<L>, number]>): void {
  const list = Array.isArray(rows) ? (rows as readonly (readonly [Labels<L>, number])[]) : [...rows];
  const last = written.get(g);
  if (last && last.store === storeOf(g) && last.labels.length === list.length && list.every(([l], i) => sameLabels(l, last.labels[i] as Labels<L>))) {
    for (let i = 0; i < list.length; i++) {
      const [labels, value] = list[i] as readonly [Labels<L>, number];
      if (Object.is(value, last.values[i])) continue;
      g.set(labels, value);
      replaceSeriesWrites.n++;
      last.values[i] = value;
    }
    return;
  }
  g.reset();
  for (const [labels, value] of list) g.set(labels, value);
  replaceSeriesWrites.n += list.length;
  written.set(g, { store: storeOf(g), labels: list.map(([l]) => l), values: list.map(([, v]) => v) });
}
