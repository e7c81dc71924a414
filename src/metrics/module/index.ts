/**
 * The Metrics Module: turns enriched flows into the advanced (`adv_*`) metrics that the current
 * MetricsConfiguration (or annotation mode) asks for. A new spec replaces every family at once, with
 * no restart; series expire by TTL; deleted pods' series are removed in one pass per batch of pods
 * (forget.ts); each metric has a series budget beyond which flows fold into one `overflow` series.
 */
import type { Endpoint, FlowBatch, FlowConsumer } from '../../flow/index.js';
import {
  advNodeApiserverLatency, advNodeApiserverNoResponse, advNodeApiserverTcpHandshakeLatency, expiredMetricsCounter, metricsModuleSeriesOverflow,
} from '../catalog.js';
import { createApiServerLatency, type ApiServerLatency } from './apiserver.js';
import type { MetricsRegistry } from '../registry.js';
import { SeriesFamily, drain, type RemovalCount } from '../series.js';
import { Aggregator, type EmitterInit } from './aggregate.js';
import { contextLabelNames } from './context.js';
import { DeltaMerger, DeltaTaker, type FamilyDeltas } from './handover.js';
import { goneSets, podSides, tailOfGonePod, type GonePods } from './forget.js';
import { KINDS, wantsApiServer, type Kind } from './kinds.js';
import { sameSpec, type ContextOption, type MetricsSpec, type NamespaceFilter } from '../spec.js';

export { validateMetricsSpec, describeIssues, annotationSpec, sameSpec, ANNOTATION_METRICS, ANNOTATION_CONTEXT } from '../spec.js';
export type { MetricsSpec, ContextOption, ContextLabel, NamespaceFilter, SpecCheck, SpecIssue } from '../spec.js';
export type { GonePods } from './forget.js';
export { DeltaMerger, type FamilyDeltas } from './handover.js';

export interface MetricsModuleOptions {
  readonly metrics: MetricsRegistry;
  /** true: `source_*`/`destination_*` labels, upper-case direction; false: local pods, lower-case. */
  readonly remoteContext: boolean;
  /**
   * This agent's node (NODE_NAME): in remote context a packet seen at a pod's veth and again at
   * another point of this node counts once (README.md, "Once per node"). Unset: each flow's
   * `nodeName`; when that is empty too, every pod counts as this node's.
   */
  readonly nodeName?: string;
  readonly maxSeriesPerMetric?: number;
  readonly now?: () => number;
  /** The API server's addresses, for the node_apiserver_* metrics (without it they stay off). */
  readonly isApiServer?: (ip: string) => boolean;
  /** A worker thread's module (src/pipeline/workers.ts): keeps overflow counts for `takeDeltas`. */
  readonly handsOver?: boolean;
  /**
   * Pod label keys (metricsPodLabelsAllowlist) and their label names (`label_<key>`): each side with
   * context labels gets them (`source_label_app` in remote context, `label_app` locally).
   */
  readonly podLabels?: readonly { readonly key: string; readonly name: string }[];
}


export interface MetricsModule extends FlowConsumer, Disposable {
  /** Applies a spec (undefined: advanced metrics off). An unchanged spec is a no-op. */
  apply(spec: MetricsSpec | undefined): void;
  /**
   * Removes every series of these deleted pods, in one pass over each family; returns how many.
   * Label sets without `podname` or `ip` on a side carry no pod identity: those series wait for TTL.
   */
  forgetPods(gone: GonePods): number;
  /**
   * `forgetPods` in steps: yields after every `step` series looked at, so that the caller can let
   * flows through in between; returns how many series it removed.
   */
  forgetPodsInSteps(gone: GonePods, step: number): Generator<void, number, void>;
  /** Names of the families currently exported. */
  families(): string[];
  /** Expires series older than their TTL now (the module also does it on a timer). */
  sweep(): void;
  /** The spec in force, and how many different specs were applied (deltas of another are not merged). */
  spec(): MetricsSpec | undefined;
  generation(): number;
  /** The API-server latency part alone (a worker thread counts the batch's flows). */
  observe(batch: FlowBatch): void;
  /** Whether `observe` wants flows (the spec has node_apiserver_* metrics and addresses are known). */
  observes(): boolean;
  /** A worker's counts since the last call, each family's series set back to 0 (handover.ts). */
  takeDeltas(): FamilyDeltas[];
  /** Adds a worker's counts (taken under this module's current spec) to the families, through that worker's merger; returns series merged. */
  merge(deltas: readonly FamilyDeltas[], from: DeltaMerger): number;
}

const API_SERVER_FAMILIES = [advNodeApiserverLatency, advNodeApiserverTcpHandshakeLatency, advNodeApiserverNoResponse];

export function createMetricsModule(opts: MetricsModuleOptions): MetricsModule {
  const now = opts.now ?? Date.now;
  const maxSeries = opts.maxSeriesPerMetric ?? 50_000;
  const podKeys = (opts.podLabels ?? []).map((p) => p.key);
  const podNames = (opts.podLabels ?? []).map((p) => p.name);
  let spec: MetricsSpec | undefined;
  let emitters: EmitterInit[] = [];
  let agg: Aggregator | undefined;
  let timer: NodeJS.Timeout | undefined;
  let apiServer: ApiServerLatency | undefined;
  let generation = 0;
  /** Overflowed flows per family since the last takeDeltas (handsOver only). */
  const overflowed = new Map<string, number>();
  const taker = new DeltaTaker();

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
    agg = undefined;
    if (timer) clearInterval(timer);
    timer = undefined;
    if (apiServer) opts.metrics.remove(API_SERVER_FAMILIES);
    apiServer = undefined;
  }

  function* forgetPodsInSteps(gone: GonePods, step: number): Generator<void, number, void> {
    if (!gone.pods.length && !gone.names.length && !gone.ips.length) return 0;
    const sets = goneSets(gone);
    let n = 0;
    for (const e of emitters) {
      if (e.podSides.length) n += yield* e.family.removeTailsInSteps((tail) => tailOfGonePod(tail, e.podSides, sets), step);
    }
    return n;
  }

  return {
    consume(batch: FlowBatch): void {
      apiServer?.consume(batch);
      if (agg !== undefined) agg.consume(batch.flows, now());
    },
    apply(next) {
      if (sameSpec(spec, next)) return;
      clear();
      spec = next;
      generation++;
      overflowed.clear();
      taker.reset();
      if (!next) return;
      const overflow = opts.metrics.counter(metricsModuleSeriesOverflow);
      const removals: RemovalCount = { n: 0 };
      for (const o of next.contextOptions) {
        const kind = KINDS[o.metricName];
        if (!kind) continue;
        const name = kind.def.name;
        const onOverflow = opts.handsOver
          ? (k: number) => void overflowed.set(name, (overflowed.get(name) ?? 0) + k)
          : (k: number) => overflow.inc({ metric: name }, k);
        const e = buildEmitter(kind, o, opts.remoteContext, maxSeries, removals, onOverflow, podNames);
        opts.metrics.attach(e.family);
        emitters.push(e);
      }
      if (emitters.length) {
        agg = new Aggregator(emitters, {
          remote: opts.remoteContext, nodeName: opts.nodeName ?? '', inScope: scope(next.namespaces),
          maxMemo: 4 * maxSeries + 65_536, removals, podLabels: podKeys,
        });
      }
      if (opts.isApiServer && next.contextOptions.some((o) => wantsApiServer(o.metricName))) {
        apiServer = createApiServerLatency({ metrics: opts.metrics, isApiServer: opts.isApiServer, now });
      }
      const ttls = emitters.map((e) => e.ttlMs).filter((x) => x > 0);
      if (ttls.length) {
        timer = setInterval(sweep, Math.min(60_000, Math.max(1000, Math.min(...ttls) / 4)));
        timer.unref();
      }
    },
    sweep,
    spec: () => spec,
    generation: () => generation,
    observe(batch) {
      apiServer?.consume(batch);
    },
    observes: () => apiServer !== undefined,
    takeDeltas() {
      const out: FamilyDeltas[] = [];
      for (const e of emitters) {
        const d = taker.take(e.family, overflowed.get(e.family.name) ?? 0);
        if (d) out.push(d);
      }
      overflowed.clear();
      return out;
    },
    merge(deltas, from) {
      let n = 0;
      for (const d of deltas) {
        const e = emitters.find((x) => x.family.name === d.name);
        if (e === undefined) continue;
        n += from.merge(e.family, d);
        if (d.overflow) opts.metrics.counter(metricsModuleSeriesOverflow).inc({ metric: d.name }, d.overflow);
      }
      return n;
    },
    forgetPods: (gone) => drain(forgetPodsInSteps(gone, Infinity)),
    forgetPodsInSteps,
    families: () => [...emitters.map((e) => e.family.name), ...(apiServer ? API_SERVER_FAMILIES.map((d) => d.name) : [])],
    [Symbol.dispose]: clear,
  };
}

function scope(filter: NamespaceFilter | undefined): ((ep: Endpoint) => boolean) | undefined {
  if (!filter) return undefined;
  if ('include' in filter) {
    const inc = new Set(filter.include);
    return (ep) => inc.has(ep.namespace);
  }
  const exc = new Set(filter.exclude);
  return (ep) => !exc.has(ep.namespace);
}

function buildEmitter(kind: Kind, o: ContextOption, remote: boolean, maxSeries: number, removals: RemovalCount, onOverflow: (n: number) => void, podNames: readonly string[]): EmitterInit {
  const isReply = o.additionalLabels.includes('is_reply') && kind.def.name.includes('forward');
  const fixed = [...kind.def.labels];
  const ctxNames = remote
    ? [...contextLabelNames(o.sourceLabels, 'source_', podNames), ...contextLabelNames(o.destinationLabels, 'destination_', podNames)]
    : contextLabelNames(o.sourceLabels, '', podNames);
  const labelNames = [...fixed, ...ctxNames, ...(isReply ? ['is_reply'] : [])];
  const family = new SeriesFamily({
    name: kind.def.name, help: kind.def.help, type: kind.def.type === 'counter' ? 'counter' : 'gauge',
    labelNames, fixedLabels: fixed.length, maxSeries, onOverflow, removals,
  });
  const sides = podSides(labelNames, fixed.length, remote ? ['source_', 'destination_'] : ['']);
  return { family, kind, ttlMs: o.ttlMs, podSides: sides, sourceLabels: o.sourceLabels, destinationLabels: remote ? o.destinationLabels : [], isReply };
}
