/**
 * The node's flow pipeline, built once from the config, over the node's watches and the consumers
 * src/cli started before it (each stage is built around the next, so nothing is handed back later):
 *
 *   plugins (sources) ─ctx.flows─▶ enricher ─▶ fanOut ─┬─▶ Metrics Module (enablePodLevel; adv_*)
 *                                     ▲                 ├─▶ Hubble ring (hubble.enabled; handed in)
 *                          IP cache (watches.ts)        ├─▶ Hubble metrics (hubble.metrics.enabled; hubble_*; handed in)
 *                                                       └─▶ flow-log exporters (src/export; handed in)
 *
 * Whether plugins produce flows is decided here, once (`flowsWanted` of the config): `flows` is the
 * sink plugins get in their context (PluginContext.flows), undefined when nothing consumes flows,
 * and then plugins attach nothing that only produces flows. Every stage is guarded (stages.ts): one
 * that throws loses its batch, counted in lost_events_counter{type="pipeline", reason=<stage>}.
 *
 * The Kubernetes side (watches.ts: one informer factory, one watch per kind, all counted) and the
 * pod-level side (pod-level.ts) load only when there is an API server, or pod level, to use them.
 *
 * The Metrics Module is built here rather than handed in like the other consumers (STYLE.md's sketch
 * has src/cli hand it in): the pod-level side drives it from the same watches (its spec, deleted
 * pods' series, the API server's addresses), so building it in src/cli would split one wiring in two.
 */
import { flowsWanted, podLabelName, type AgentConfig } from '../config/index.js';
import { cacheLookup, createEnricher, type EndpointLookup } from '../enricher/index.js';
import { fanOut, type FlowConsumer } from '../flow/index.js';
import type { RestClient } from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import type { MetricsModule } from '../metrics/module/index.js';
import { everyIp, type IpInterest } from '../plugin/index.js';
import type { SpecController } from './pod-level-spec.js';
import { guarded } from './stages.js';
import type { NodeWatches } from './watches.js';
import type { PipelineWorkers } from './workers.js';
import { resolvePipelineWorkers, startedFromSnapshot } from './worker-count.js';

/** A consumer of enriched flows; `name` is its stage in lost_events_counter when it throws. */
export interface NamedConsumer {
  readonly name: string;
  readonly consumer: FlowConsumer;
  /**
   * A consumer that keeps series per pod (the Hubble metrics): deleted pods' series are removed from
   * it as from the Metrics Module's (pod-level-forget.ts), when there is a Kubernetes API.
   */
  readonly forget?: Pick<MetricsModule, 'forgetPodsInSteps'>;
}

export interface NodePipelineOptions {
  readonly agent: AgentConfig;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
  /** The node's watches (startNodeWatches), or undefined for a standalone agent; their owner disposes them. */
  readonly watches: NodeWatches | undefined;
  /**
   * Consumers of enriched flows beside the Metrics Module, in order: the Hubble ring (hubble.enabled),
   * then the flow-log exporters (src/export). A new kind of consumer is added here and to
   * `flowsWanted` (src/config/agent.ts), so plugins produce flows for it.
   */
  readonly consumers: readonly NamedConsumer[];
}

export interface NodePipeline extends AsyncDisposable {
  /** Where plugins hand their flow batches (PluginContext.flows); undefined when no flows are wanted. */
  readonly flows: FlowConsumer | undefined;
  /** The IPs of interest for kernel-side filters (every IP without pod level or Kubernetes). */
  readonly interest: IpInterest;
  /** The Metrics Module (enablePodLevel). */
  readonly module: MetricsModule | undefined;
  /** The pod-level spec in force (enablePodLevel with Kubernetes). */
  readonly spec: SpecController | undefined;
  /** The worker threads (pipelineWorkers > 0 with enablePodLevel). */
  readonly workers: PipelineWorkers | undefined;
}

const noLookup: EndpointLookup = { byIp: () => undefined };

/**
 * The node's watches (watches.ts, loaded only now): the one informer factory and the IP cache, started
 * first, so that every part reading them (the pipeline, Hubble's peers, the ContainerNetworkLog
 * selection) is built with them. The caller disposes them, after everything that reads them.
 */
export async function startNodeWatches(o: { client: RestClient; nodeName: string | undefined; agent: AgentConfig; metrics: MetricsRegistry; log: Logger }): Promise<NodeWatches> {
  const { startWatches } = await import('./watches.js');
  return startWatches({ client: o.client, nodeName: o.nodeName, remoteContext: o.agent.remoteContext, endpointSlices: o.agent.retinaEndpointSlices, log: o.log.child({ component: 'k8s' }), metrics: o.metrics });
}

export async function startNodePipeline(o: NodePipelineOptions): Promise<NodePipeline> {
  const log = o.log.child({ component: 'pipeline' });
  const wanted = flowsWanted(o.agent);
  const { watches } = o;
  const podLevel = o.agent.enablePodLevel ? await (await import('./pod-level.js')).startPodLevel({ agent: o.agent, metrics: o.metrics, log: o.log, k8s: watches }) : undefined;
  const consumers = [...(podLevel ? [{ name: 'metrics_module', consumer: podLevel.module }] : []), ...o.consumers];
  const stages = consumers.map((c) => guarded(c.consumer, 'pipeline', c.name, o.metrics, log));
  const lookup = watches ? cacheLookup(watches.cache) : noLookup;
  let flows = wanted && stages.length ? guarded(createEnricher(lookup, fanOut(stages)), 'pipeline', 'enricher', o.metrics, log) : undefined;
  if (wanted && !stages.length) log.warn('flows are wanted but no consumer was wired; plugins produce none');
  const forgetting = o.consumers.filter((c) => c.forget !== undefined);
  const forgetters = watches && forgetting.length
    ? await import('./pod-level-forget.js').then((m) => forgetting.map((c) => m.startPodForgetter({
      pods: watches.watch.pods, cache: watches.cache, module: c.forget as NonNullable<NamedConsumer['forget']>, log: log.child({ consumer: c.name }),
    })))
    : [];
  // Worker threads (pipelineWorkers): sources that can hand raw records over have them decoded,
  // enriched and counted there; only the counting (the Metrics Module) moves, the other consumers
  // get those flows here, in drain order, as before (workers.ts).
  let workerCount = resolvePipelineWorkers(o.agent.pipelineWorkers);
  if (workerCount > 0 && startedFromSnapshot()) {
    log.warn('pipelineWorkers needs an agent started without the start-up snapshot (the image: command node /app/retina-agent.mjs, which the chart sets when config.pipelineWorkers is): Node 22 aborts the process when a worker starts after --snapshot-blob; flows are counted on the main thread', { setting: o.agent.pipelineWorkers });
    workerCount = 0;
  }
  let workers: PipelineWorkers | undefined;
  if (flows && podLevel && workerCount > 0) {
    const module = podLevel.module;
    const apiServer = guarded({ consume: (b) => module.observe(b) }, 'pipeline', 'metrics_module', o.metrics, log);
    const others = stages.slice(1);
    const onThread = guarded(createEnricher(lookup, fanOut([apiServer, ...others])), 'pipeline', 'enricher', o.metrics, log);
    const { startPipelineWorkers } = await import('./workers.js');
    workers = startPipelineWorkers({
      workers: workerCount, module, cache: watches?.cache, remoteContext: o.agent.remoteContext, nodeName: watches?.nodeName ?? '',
      podLabels: o.agent.metricsPodLabels.map((key) => ({ key, name: podLabelName(key) })),
      metrics: o.metrics, log, onThread, wantsFlows: () => others.length > 0 || module.observes(), fallback: flows,
    });
    const pool = workers;
    const inThread = flows;
    flows = { consume: (b) => inThread.consume(b), openRaw: (ref) => pool.openRaw(ref) };
    log.info('pipeline workers started', { workers: workerCount, setting: o.agent.pipelineWorkers });
  }
  return {
    flows,
    interest: podLevel?.interest ?? everyIp,
    module: podLevel?.module,
    spec: podLevel?.spec,
    workers,
    // The workers (their last counts merged), then the consumers' forgetters and the pod-level side (their
    // subscriptions); the watches they read are their owner's.
    [Symbol.asyncDispose]: async () => {
      try {
        await workers?.[Symbol.asyncDispose]();
      } finally {
        for (const f of forgetters) f[Symbol.dispose]();
        await podLevel?.[Symbol.asyncDispose]();
      }
    },
  };
}
