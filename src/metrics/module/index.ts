/**
 * The Metrics Module: turns enriched flows into the advanced (`adv_*`) metrics that the current
 * MetricsConfiguration (or annotation mode) asks for. A new spec replaces every family at once, with
 * no restart; series expire by TTL; a deleted pod's series can be removed at once; each metric has
 * a series budget beyond which flows fold into one `overflow` series.
 */
import type { Endpoint, Flow, FlowBatch, FlowConsumer } from '../../flow/index.js';
import {
  advNodeApiserverLatency, advNodeApiserverNoResponse, advNodeApiserverTcpHandshakeLatency, expiredMetricsCounter, metricsModuleSeriesOverflow,
} from '../catalog.js';
import { createApiServerLatency, type ApiServerLatency } from './apiserver.js';
import type { MetricsRegistry } from '../registry.js';
import { SEP, SeriesFamily } from '../series.js';
import { compileSide, contextLabelNames, sideSignature } from './context.js';
import { KINDS, type Kind } from './kinds.js';
import { sameSpec, type ContextOption, type MetricsSpec, type NamespaceFilter } from './spec.js';

export { parseMetricsSpec, annotationSpec, sameSpec, SpecError, ADVANCED_METRIC_NAMES, CONTEXT_LABELS } from './spec.js';
export type { MetricsSpec, ContextOption, ContextLabel, NamespaceFilter } from './spec.js';

export interface MetricsModuleOptions {
  readonly metrics: MetricsRegistry;
  /** true: `source_*`/`destination_*` labels, upper-case direction; false: local pods, lower-case. */
  readonly remoteContext: boolean;
  readonly maxSeriesPerMetric?: number;
  readonly now?: () => number;
  /** The API server's addresses, for the node_apiserver_* metrics (without it they stay off). */
  readonly isApiServer?: (ip: string) => boolean;
}

export interface MetricsModule extends FlowConsumer, Disposable {
  /** Applies a spec (undefined: advanced metrics off). An unchanged spec is a no-op. */
  apply(spec: MetricsSpec | undefined): void;
  /** Removes every series labelled with this pod; returns how many. */
  forgetPod(namespace: string, podName: string): number;
  /** Names of the families currently exported. */
  families(): string[];
  /** Expires series older than their TTL now (the module also does it on a timer). */
  sweep(): void;
}

const API_SERVER_FAMILIES = [advNodeApiserverLatency, advNodeApiserverTcpHandshakeLatency, advNodeApiserverNoResponse];

interface Emitter {
  readonly family: SeriesFamily;
  readonly ttlMs: number;
  /** `tails` holds this flow's value of every shared tail function, by index. */
  record(f: Readonly<Flow>, tails: readonly string[], now: number): void;
  /** Index pairs [namespace, podname] of label values, per side that has both. */
  readonly podLabels: readonly (readonly [number, number])[];
}

/** The distinct context-label strings of a spec, each computed once per flow and shared. */
class Tails {
  readonly fns: ((f: Readonly<Flow>) => string)[] = [];
  readonly #bySig = new Map<string, number>();
  index(sig: string, make: () => (f: Readonly<Flow>) => string): number {
    let i = this.#bySig.get(sig);
    if (i === undefined) {
      i = this.fns.push(make()) - 1;
      this.#bySig.set(sig, i);
    }
    return i;
  }
}

export function createMetricsModule(opts: MetricsModuleOptions): MetricsModule {
  const now = opts.now ?? Date.now;
  const maxSeries = opts.maxSeriesPerMetric ?? 50_000;
  let spec: MetricsSpec | undefined;
  let emitters: Emitter[] = [];
  let tails = new Tails();
  let vals: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  let apiServer: ApiServerLatency | undefined;

  function sweep(): void {
    const t = now();
    for (const e of emitters) {
      if (e.ttlMs <= 0) continue;
      const n = e.family.expire(t - e.ttlMs);
      if (n) opts.metrics.counter(expiredMetricsCounter).inc({ metric: e.family.name }, n);
    }
  }

  function clear(): void {
    for (const e of emitters) opts.metrics.detach(e.family.name);
    emitters = [];
    tails = new Tails();
    if (timer) clearInterval(timer);
    timer = undefined;
    if (apiServer) opts.metrics.remove(API_SERVER_FAMILIES);
    apiServer = undefined;
  }

  return {
    consume(batch: FlowBatch): void {
      apiServer?.consume(batch);
      const n = emitters.length;
      if (n === 0) return;
      const t = now();
      const fns = tails.fns;
      const flows = batch.flows;
      for (let i = 0; i < flows.length; i++) {
        const f = flows[i] as Flow;
        for (let k = 0; k < fns.length; k++) vals[k] = (fns[k] as (f: Readonly<Flow>) => string)(f);
        for (let j = 0; j < n; j++) (emitters[j] as Emitter).record(f, vals, t);
      }
    },
    apply(next) {
      if (sameSpec(spec, next)) return;
      clear();
      spec = next;
      if (!next) return;
      const inScope = scope(next.namespaces);
      const overflow = opts.metrics.counter(metricsModuleSeriesOverflow);
      for (const o of next.contextOptions) {
        const kind = KINDS[o.metricName];
        if (!kind) continue;
        const e = buildEmitter(kind, o, opts.remoteContext, inScope, tails, maxSeries, (k) => overflow.inc({ metric: kind.def.name }, k));
        opts.metrics.attach(e.family);
        emitters.push(e);
      }
      vals = new Array<string>(tails.fns.length).fill('');
      if (opts.isApiServer && next.contextOptions.some((o) => o.metricName.startsWith('node_apiserver_'))) {
        apiServer = createApiServerLatency({ metrics: opts.metrics, isApiServer: opts.isApiServer, now });
      }
      const ttls = emitters.map((e) => e.ttlMs).filter((x) => x > 0);
      if (ttls.length) {
        timer = setInterval(sweep, Math.min(60_000, Math.max(1000, Math.min(...ttls) / 4)));
        timer.unref();
      }
    },
    sweep,
    forgetPod(namespace, podName) {
      let n = 0;
      for (const e of emitters) {
        if (!e.podLabels.length) continue;
        n += e.family.removeWhere((v) => e.podLabels.some(([ns, pod]) => v[ns] === namespace && v[pod] === podName));
      }
      return n;
    },
    families: () => emitters.map((e) => e.family.name),
    [Symbol.dispose]: clear,
  };
}

function scope(filter: NamespaceFilter | undefined): (ep: Endpoint | undefined) => boolean {
  if (!filter) return () => true;
  if ('include' in filter) {
    const inc = new Set(filter.include);
    return (ep) => ep !== undefined && inc.has(ep.namespace);
  }
  const exc = new Set(filter.exclude);
  return (ep) => ep !== undefined && !exc.has(ep.namespace);
}

function directionLabel(f: Readonly<Flow>): string {
  return f.direction === 'UNKNOWN' ? 'TRAFFIC_DIRECTION_UNKNOWN' : f.direction;
}

const replyValue = (f: Readonly<Flow>): string => SEP + (f.isReply === undefined ? 'unknown' : String(f.isReply));

function buildEmitter(kind: Kind, o: ContextOption, remote: boolean, inScope: (ep: Endpoint | undefined) => boolean, tails: Tails, maxSeries: number, onOverflow: (n: number) => void): Emitter {
  const isReply = o.additionalLabels.includes('is_reply') && kind.def.name.includes('forward');
  const fixed = [...kind.def.labels];
  const ctxNames = remote
    ? [...contextLabelNames(o.sourceLabels, 'source_'), ...contextLabelNames(o.destinationLabels, 'destination_')]
    : contextLabelNames(o.sourceLabels, '');
  const labelNames = [...fixed, ...ctxNames, ...(isReply ? ['is_reply'] : [])];
  const family = new SeriesFamily({
    name: kind.def.name, help: kind.def.help, type: kind.def.type === 'counter' ? 'counter' : 'gauge',
    labelNames, fixedLabels: fixed.length, maxSeries, onOverflow,
  });
  const podLabels = podLabelIndexes(labelNames, remote ? ['source_', 'destination_'] : ['']);
  const withReply = (fn: (f: Readonly<Flow>) => string) => (isReply ? (f: Readonly<Flow>) => fn(f) + replyValue(f) : fn);
  let record: Emitter['record'];
  if (remote) {
    const sig = `${sideSignature(o.sourceLabels, 'source')}|${sideSignature(o.destinationLabels, 'destination')}|${isReply}`;
    const ti = tails.index(sig, () => {
      const src = compileSide(o.sourceLabels, 'source');
      const dst = compileSide(o.destinationLabels, 'destination');
      return withReply((f) => src(f) + dst(f));
    });
    record = (f, tv, t) => {
      if (!kind.accepts(f) || !(inScope(f.source) || inScope(f.destination))) return;
      const tail = tv[ti] as string;
      const d = kind.delta(f);
      kind.prefixes(f, directionLabel(f), (p) => family.add(p, tail, d, t));
    };
  } else {
    // Local context: a flow counts for the pod on each end this node knows, labelled with that pod.
    const si = tails.index(`${sideSignature(o.sourceLabels, 'source')}|${isReply}`, () => withReply(compileSide(o.sourceLabels, 'source')));
    const di = tails.index(`${sideSignature(o.sourceLabels, 'destination')}|${isReply}`, () => withReply(compileSide(o.sourceLabels, 'destination')));
    record = (f, tv, t) => {
      if (!kind.accepts(f)) return;
      const d = kind.delta(f);
      if (!kind.directional) {
        // As Retina: the destination pod for INGRESS flows, else the source pod.
        const useDst = f.direction === 'INGRESS';
        const ep = useDst ? f.destination : f.source;
        if (ep === undefined || !inScope(ep)) return;
        const tail = tv[useDst ? di : si] as string;
        kind.prefixes(f, '', (p) => family.add(p, tail, d, t));
        return;
      }
      if (f.source !== undefined && inScope(f.source)) {
        const tail = tv[si] as string;
        kind.prefixes(f, 'egress', (p) => family.add(p, tail, d, t));
      }
      if (f.destination !== undefined && inScope(f.destination)) {
        const tail = tv[di] as string;
        kind.prefixes(f, 'ingress', (p) => family.add(p, tail, d, t));
      }
    };
  }
  return { family, ttlMs: o.ttlMs, record, podLabels };
}

function podLabelIndexes(names: readonly string[], prefixes: readonly string[]): [number, number][] {
  const out: [number, number][] = [];
  for (const p of prefixes) {
    const ns = names.indexOf(`${p}namespace`);
    const pod = names.indexOf(`${p}podname`);
    if (ns >= 0 && pod >= 0) out.push([ns, pod]);
  }
  return out;
}
