/**
 * The agent's Kubernetes side, wired by agent.ts: with --kubeconfig or in-cluster credentials it
 * watches into the IP cache (remote context: RetinaEndpoints, Services, Nodes; local context: this
 * node's Pods); without either it returns undefined and the agent stays standalone.
 */
import { IpCache } from '../cache/index.js';
import type { AgentConfig } from '../config/index.js';
import { createRestClient, kubernetesAvailable, loadRestConfig, startAgentWatch, type AgentWatch, type RestClient } from '../k8s/index.js';
import { errorFields, type Logger } from '../log/index.js';
import { catalog, type MetricWriters } from '../metrics/index.js';

export interface AgentKubernetes extends AsyncDisposable {
  readonly cache: IpCache;
  readonly watch: AgentWatch;
  readonly client: RestClient;
  /** This node's name (NODE_NAME), when the environment gives it. */
  readonly nodeName: string | undefined;
}

export async function startAgentKubernetes(o: {
  kubeconfig: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  agent: AgentConfig;
  log: Logger;
  metrics?: MetricWriters;
}): Promise<AgentKubernetes | undefined> {
  if (!kubernetesAvailable({ kubeconfig: o.kubeconfig, env: o.env })) return undefined;
  const log = o.log.child({ component: 'k8s' });
  let client: RestClient;
  try {
    client = createRestClient(await loadRestConfig({ kubeconfig: o.kubeconfig, env: o.env }), { userAgent: 'retina-agent', maxSockets: 8 });
  } catch (e) {
    log.error('cannot use the Kubernetes credentials; running standalone', { error: errorFields(e as Error) });
    return undefined;
  }
  const cache = new IpCache();
  // Retina's daemonset passes the node name as NODE_NAME (downward API).
  const nodeName = o.env['NODE_NAME'] || undefined;
  if (!o.agent.remoteContext && !nodeName) {
    log.error('local context (remoteContext: false) needs NODE_NAME to watch this node\'s pods; running standalone');
    client.close();
    return undefined;
  }
  const events = o.metrics?.counter(catalog.k8sWatchEvents);
  const rejected = o.metrics?.counter(catalog.k8sObjectsRejected);
  const watch = startAgentWatch({
    client, cache, remoteContext: o.agent.remoteContext, nodeName, log,
    onEvent: (event, resource) => events?.inc({ resource, event }), onRejected: (reason, resource) => rejected?.inc({ resource, reason }),
  });
  void watch.waitForSync().then(() => log.info('IP cache synced', { ...cache.stats() }), () => undefined);
  return {
    cache,
    watch,
    client,
    nodeName,
    async [Symbol.asyncDispose]() {
      await watch[Symbol.asyncDispose]();
      client.close();
    },
  };
}
