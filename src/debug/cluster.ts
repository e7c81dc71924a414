/**
 * What the shell and the trace do with the API server besides streams: the target node (Linux only,
 * as Retina), creating and deleting their pods, adding the ephemeral container, and waiting for a
 * container to run (Retina's waitForContainerRunning: the state of the pod's container or ephemeral
 * container, polled, with a clear message on timeout naming the waiting reason).
 */
import { isApiError, objectPath, resources, type KubeObject, type RestClient } from '../k8s/index.js';
import type { PodSpecOut } from './pods.js';

interface ContainerStatus {
  name: string;
  state?: { running?: unknown; waiting?: { reason?: string; message?: string }; terminated?: { reason?: string; exitCode?: number; message?: string } };
}
export interface PodWire extends KubeObject {
  spec?: { nodeName?: string; containers?: { name: string }[]; ephemeralContainers?: { name: string }[] };
  status?: { phase?: string; containerStatuses?: ContainerStatus[]; ephemeralContainerStatuses?: ContainerStatus[] };
}
interface NodeWire extends KubeObject {
  status?: { nodeInfo?: { operatingSystem?: string } };
}

export class DebugError extends Error {
  override readonly name = 'DebugError';
}

/** The node, checked to be Linux (its kubernetes.io/os label, else its nodeInfo). */
export async function linuxNode(client: RestClient, node: string): Promise<void> {
  let n: NodeWire;
  try {
    n = await client.request<NodeWire>('GET', objectPath(resources.nodes, undefined, node));
  } catch (e) {
    if (isApiError(e, 404)) throw new DebugError(`node ${JSON.stringify(node)} not found`, { cause: e });
    throw e;
  }
  const os = n.metadata.labels?.['kubernetes.io/os'] ?? n.status?.nodeInfo?.operatingSystem ?? '';
  if (os !== 'linux') throw new DebugError(`node ${node} runs ${os || 'an unknown OS'}: the shell and bpftrace need a Linux node`);
}

export async function createPod(client: RestClient, pod: PodSpecOut): Promise<void> {
  await client.request('POST', `/api/v1/namespaces/${encodeURIComponent(pod.metadata.namespace)}/pods`, { body: pod });
}

/** Deletes the pod now (grace 0); a pod already gone is fine. */
export async function deletePod(client: RestClient, namespace: string, name: string): Promise<void> {
  try {
    await client.request('DELETE', objectPath(resources.pods, namespace, name), { body: { gracePeriodSeconds: 0 }, timeoutMs: 30_000 });
  } catch (e) {
    if (!isApiError(e, 404)) throw e;
  }
}

export async function getPod(client: RestClient, namespace: string, name: string): Promise<PodWire> {
  try {
    return await client.request<PodWire>('GET', objectPath(resources.pods, namespace, name));
  } catch (e) {
    if (isApiError(e, 404)) throw new DebugError(`pod ${namespace}/${name} not found`, { cause: e });
    throw e;
  }
}

/** Adds the ephemeral container to the pod (a strategic merge patch of the ephemeralcontainers subresource, as kubectl debug). */
export async function addEphemeralContainer(client: RestClient, namespace: string, pod: string, container: Record<string, unknown>): Promise<void> {
  await client.request('PATCH', `${objectPath(resources.pods, namespace, pod)}/ephemeralcontainers`, {
    body: { spec: { ephemeralContainers: [container] } }, contentType: 'application/strategic-merge-patch+json',
  });
}

/** The container's status in the pod (a container or an ephemeral container). */
export function containerStatus(pod: PodWire, container: string): ContainerStatus | undefined {
  return [...(pod.status?.containerStatuses ?? []), ...(pod.status?.ephemeralContainerStatuses ?? [])].find((s) => s.name === container);
}

/** Polls until the container runs; a DebugError when it ended, or after `timeoutMs` (with why it waits). */
export async function waitForContainerRunning(client: RestClient, namespace: string, pod: string, container: string, timeoutMs: number, signal?: AbortSignal, everyMs = 500): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'not scheduled yet';
  for (;;) {
    signal?.throwIfAborted();
    const p = await getPod(client, namespace, pod);
    const s = containerStatus(p, container);
    if (s?.state?.running) return;
    const t = s?.state?.terminated;
    if (t) throw new DebugError(`container ${container} of pod ${namespace}/${pod} ended before the session (${t.reason ?? 'terminated'}, exit ${t.exitCode ?? '?'}${t.message ? `: ${t.message}` : ''})`);
    const w = s?.state?.waiting;
    if (w) last = `${w.reason ?? 'waiting'}${w.message ? `: ${w.message}` : ''}`;
    else if (p.status?.phase) last = `pod ${p.status.phase}`;
    if (Date.now() >= deadline) {
      throw new DebugError(`timed out after ${Math.round(timeoutMs / 1000)}s waiting for container ${container} of pod ${namespace}/${pod} to start (${last}); raise --timeout, or see kubectl describe pod -n ${namespace} ${pod}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
