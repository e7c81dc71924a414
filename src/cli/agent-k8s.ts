/**
 * The agent's API server, wired by agent.ts: with --kubeconfig or in-cluster credentials, a client
 * and this node's name (NODE_NAME); without either it returns undefined and the agent stays
 * standalone. What the agent watches through it is the pipeline's (src/pipeline/watches.ts).
 */
import type { AgentConfig } from '../config/index.js';
import { createRestClient, kubernetesAvailable, loadRestConfig, type RestClient } from '../k8s/index.js';
import { errorFields, type Logger } from '../log/index.js';

export interface AgentKubernetes extends Disposable {
  readonly client: RestClient;
  /** This node's name (NODE_NAME), when the environment gives it. */
  readonly nodeName: string | undefined;
}

export async function connectKubernetes(o: {
  kubeconfig: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  agent: AgentConfig;
  log: Logger;
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
  // Retina's daemonset passes the node name as NODE_NAME (downward API).
  const nodeName = o.env['NODE_NAME'] || undefined;
  if (!o.agent.remoteContext && !nodeName) {
    log.error('local context (remoteContext: false) needs NODE_NAME to watch this node\'s pods; running standalone');
    client.close();
    return undefined;
  }
  return { client, nodeName, [Symbol.dispose]: () => client.close() };
}
