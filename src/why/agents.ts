/**
 * The agents of the nodes involved, and their recent flows: each agent pod of the chart
 * (CHART_AGENT_SELECTOR, any namespace) on those nodes is asked Hubble's GetFlows (history only, no
 * follow) through a port-forward over the API server to its `hubble` port (src/k8s port-forward.ts:
 * what `kubectl port-forward` does), so nothing but the API server has to be reachable from
 * kubectl's machine. With TLS on the agents (hubble.tls.enabled), the client verifies each as
 * Hubble Relay does (`<node>.<cluster>.hubble-grpc.cilium.io`) and shows its certificate. An agent
 * that cannot answer is a note, and the others still count.
 */
import * as grpc from '@grpc/grpc-js';
import { forwardLocally, CHART_AGENT_SELECTOR, collectionPath, resources, type KubeList, type KubeObject, type RestClient } from '../k8s/index.js';
import { timestamp, tlsServerName, type HubbleFlow, type HubbleProtoFiles } from '../flow/hubble/index.js';
import { readFlow, type SeenFlow } from './flows.js';

export interface AgentRef {
  readonly node: string;
  readonly namespace: string;
  readonly pod: string;
  /** The container port named `hubble` (undefined: Hubble is off on this agent). */
  readonly port: number | undefined;
}

export interface AgentAnswer {
  readonly agent: AgentRef;
  readonly flows: readonly SeenFlow[];
  /** The node name the Hubble server behind the port gives itself (GetNodes); undefined when it did not say. */
  readonly calls?: string;
  readonly error?: string;
  readonly tookMs: number;
}

interface AgentPodWire extends KubeObject {
  spec: { nodeName?: string; containers: { ports?: { name?: string; containerPort: number }[] }[] };
  status?: { phase?: string };
}

/** The running agent pod of each node (a node without one is left out: the caller says so). */
export async function findAgents(client: RestClient, nodes: readonly string[], signal?: AbortSignal): Promise<AgentRef[]> {
  const list = await client.request<KubeList<AgentPodWire>>('GET', collectionPath(resources.pods), { query: { labelSelector: CHART_AGENT_SELECTOR }, signal });
  const out: AgentRef[] = [];
  for (const node of nodes) {
    const p = list.items.find((x) => x.spec.nodeName === node && x.status?.phase === 'Running');
    if (!p) continue;
    const port = p.spec.containers.flatMap((c) => c.ports ?? []).find((x) => x.name === 'hubble')?.containerPort;
    out.push({ node, namespace: p.metadata.namespace ?? '', pod: p.metadata.name, port });
  }
  return out;
}

export interface FlowQuery {
  /** Hubble FlowFilters (proto-loader shape: snake_case); a flow matching any is sent. */
  readonly whitelist: readonly Record<string, unknown>[];
  /** The last N matching flows of each agent. */
  readonly last: number;
  readonly sinceMs: number;
  /** Deadline of the whole call, ms since the epoch. */
  readonly deadlineMs: number;
}

/** TLS to agents that serve it (hubble.tls.enabled): the CA that signed them, our client certificate and key (mutual TLS), their cluster name. */
export interface HubbleTls {
  readonly ca: Buffer;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
  /** hubble.clusterName: the agents' certificates name `<node>.<cluster>.hubble-grpc.cilium.io`. */
  readonly clusterName: string;
}

type ObserverClient = grpc.Client & {
  getFlows(req: unknown, opts: grpc.CallOptions): grpc.ClientReadableStream<Record<string, unknown>>;
  getNodes(req: unknown, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: { nodes?: { name?: string }[] }) => void): grpc.ClientUnaryCall;
};

/** The Observer client constructor of the Hubble protos (observer.proto and what it imports). */
export function observerClient(protos: HubbleProtoFiles): grpc.ServiceClientConstructor {
  const pkg = grpc.loadPackageDefinition(protos.definition()) as unknown as { observer?: { Observer?: grpc.ServiceClientConstructor } };
  const c = pkg.observer?.Observer;
  if (!c) throw new Error(`the Hubble protos in ${protos.dir} have no observer.Observer service`);
  return c;
}

/** One agent's flows for the query, through a port-forward; errors become the answer's `error`. */
export async function agentFlows(client: RestClient, Observer: grpc.ServiceClientConstructor, agent: AgentRef, q: FlowQuery, tls: HubbleTls | undefined, signal?: AbortSignal): Promise<AgentAnswer> {
  const t0 = Date.now();
  let calls: string | undefined;
  const answer = (flows: readonly SeenFlow[], error?: string): AgentAnswer => ({ agent, flows, tookMs: Date.now() - t0, ...(calls ? { calls } : {}), ...(error ? { error } : {}) });
  if (agent.port === undefined) return answer([], `agent ${agent.namespace}/${agent.pod} serves no Hubble port (hubble.enabled is off)`);
  let fwd: Awaited<ReturnType<typeof forwardLocally>> | undefined;
  let c: ObserverClient | undefined;
  try {
    fwd = await forwardLocally(client.config, { namespace: agent.namespace, pod: agent.pod, port: agent.port, signal, userAgent: 'kubectl-retina' });
    const name = tls ? tlsServerName(agent.node, tls.clusterName) : '';
    const creds = tls ? grpc.credentials.createSsl(tls.ca, tls.key ?? null, tls.cert ?? null) : grpc.credentials.createInsecure();
    const opts = { 'grpc.enable_retries': 0, ...(tls ? { 'grpc.ssl_target_name_override': name, 'grpc.default_authority': name } : {}) };
    c = new Observer(`127.0.0.1:${fwd.port}`, creds, opts) as unknown as ObserverClient;
    // who answers on the port: our agent names its node (another Hubble on the node's port, Cilium's, does not)
    const oc = c;
    calls = await new Promise<string | undefined>((resolve) => {
      oc.getNodes({}, { deadline: new Date(q.deadlineMs) }, (e, r) => resolve(e ? undefined : r?.nodes?.[0]?.name));
    });
    const req = { number: q.last, since: timestamp(q.sinceMs), whitelist: q.whitelist };
    const flows = await new Promise<SeenFlow[]>((resolve, reject) => {
      const got: SeenFlow[] = [];
      const call = (c as ObserverClient).getFlows(req, { deadline: new Date(q.deadlineMs) });
      const onAbort = (): void => call.cancel();
      signal?.addEventListener('abort', onAbort, { once: true });
      call.on('data', (m: Record<string, unknown>) => {
        if (m['flow']) got.push(readFlow(m['flow'] as HubbleFlow, String(m['node_name'] ?? agent.node)));
      });
      call.on('error', (e: grpc.ServiceError) => {
        signal?.removeEventListener('abort', onAbort);
        reject(new Error(fwd?.errors[0] ?? e.details ?? e.message));
      });
      call.on('end', () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(got);
      });
    });
    return answer(flows);
  } catch (e) {
    return answer([], `agent ${agent.namespace}/${agent.pod} on node ${agent.node}: ${(e as Error).message}`);
  } finally {
    c?.close();
    await fwd?.[Symbol.asyncDispose]();
  }
}
