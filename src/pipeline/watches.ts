/**
 * The node's one informer factory: every watch the agent runs goes through it, so each kind is
 * watched once however many parts read it, and every watch event is counted in
 * `k8s_watch_events_total{resource, event}` (rejected objects in `k8s_objects_rejected_total`).
 *
 * - the IP cache (k8s/agent-watch.ts): RetinaEndpoints (or RetinaEndpointSlices), Services and Nodes (remote context) or this
 *   node's Pods (local context);
 * - the pod-level spec (pod-level.ts): MetricsConfigurations, or annotated Namespaces;
 * - Hubble's peers (`nodes()`): the same Nodes informer as the cache's in remote context;
 * - the ContainerNetworkLog selection (src/export/cnl.ts, with flowLogs.enabled): `factory`.
 *
 * Loaded only with a Kubernetes API (node.ts's startNodeWatches imports it dynamically).
 */
import { IpCache, type NodeEndpoint } from '../cache/index.js';
import { createInformerFactory, nodeTransform, resources, startAgentWatch, type AgentWatch, type Informer, type InformerFactory, type RestClient } from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import { catalog, type MetricWriters } from '../metrics/index.js';

export interface NodeWatches extends AsyncDisposable {
  readonly client: RestClient;
  readonly nodeName: string | undefined;
  readonly factory: InformerFactory;
  readonly cache: IpCache;
  readonly watch: AgentWatch;
  /** The cluster's Nodes (the cache's informer in remote context; started on first ask otherwise). */
  nodes(): Informer<NodeEndpoint>;
}

export function startWatches(o: { client: RestClient; nodeName: string | undefined; remoteContext: boolean; endpointSlices?: boolean; log: Logger; metrics: MetricWriters }): NodeWatches {
  const events = o.metrics.counter(catalog.k8sWatchEvents);
  const rejected = o.metrics.counter(catalog.k8sObjectsRejected);
  const factory = createInformerFactory({
    client: o.client, log: o.log, initialState: 'stream',
    onEvent: (event, resource) => events.inc({ resource, event }), onRejected: (reason, resource) => rejected.inc({ resource, reason }),
  });
  const cache = new IpCache();
  const watch = startAgentWatch({ client: o.client, cache, remoteContext: o.remoteContext, endpointSlices: o.endpointSlices ?? false, nodeName: o.nodeName, log: o.log, factory });
  void watch.waitForSync().then(() => o.log.info('IP cache synced', { ...cache.stats() }), () => undefined);
  return {
    client: o.client,
    nodeName: o.nodeName,
    factory,
    cache,
    watch,
    // The same spec as agent-watch.ts's (same transform), so the factory hands back that informer.
    nodes: () => factory.informer({ resource: resources.nodes, transform: nodeTransform }),
    async [Symbol.asyncDispose]() {
      await watch[Symbol.asyncDispose]();
      await factory[Symbol.asyncDispose]();
    },
  };
}
