/**
 * A Capture's target -> the nodes to run on (and, for pod targets, the pods' IPs per node), read from
 * the API server: nodes by nodeSelector; pods by namespaceSelector + podSelector across namespaces, or
 * podNames (`name` in the capture's namespace, or `namespace/name`). The operator and the CLI share it.
 */
import { collectionPath, isApiError, objectPath, podIps, resources, type CaptureSpec, type KubeList, type KubeObject, type LabelSelector, type PodWire, type RestClient } from '../k8s/index.js';
import type { NodeOs, TargetNode } from './job.js';
import { targetKind } from './spec.js';

export const OS_LABEL = 'kubernetes.io/os';

/** A label selector as the API's labelSelector query (`a=b,c in (d,e),!f`). */
export function selectorString(sel: LabelSelector | undefined): string {
  if (!sel) return '';
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const vals = (e.values ?? []).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${vals})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${vals})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else parts.push(`!${e.key}`);
  }
  return parts.join(',');
}

async function listAll<T extends KubeObject>(client: RestClient, path: string, labelSelector: string, signal?: AbortSignal): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  do {
    const page = await client.request<KubeList<T>>('GET', path, { query: { labelSelector, limit: 500, continue: cont }, signal });
    out.push(...page.items);
    cont = page.metadata.continue || undefined;
  } while (cont);
  return out;
}

interface NodeLike extends KubeObject { spec?: { unschedulable?: boolean } }

function nodeOs(n: KubeObject): NodeOs {
  return n.metadata.labels?.[OS_LABEL] === 'windows' ? 'windows' : 'linux';
}

export class TargetError extends Error {
  override readonly name = 'TargetError';
}

/** Resolves the target. Throws TargetError when it selects nothing, names a missing pod, or a target pod has no IP yet. */
export async function resolveTargets(client: RestClient, namespace: string, spec: CaptureSpec, signal?: AbortSignal): Promise<TargetNode[]> {
  const t = spec.captureConfiguration.captureTarget;
  const kind = targetKind(spec);
  const nodes = new Map((await listAll<NodeLike>(client, collectionPath(resources.nodes), '', signal)).map((n) => [n.metadata.name, n]));
  if (kind === 'nodeSelector') {
    const sel = await listAll<NodeLike>(client, collectionPath(resources.nodes), selectorString(t.nodeSelector), signal);
    if (!sel.length) throw new TargetError(`nodeSelector ${JSON.stringify(selectorString(t.nodeSelector))} selects no node`);
    return sel.map((n) => ({ name: n.metadata.name, os: nodeOs(n) }));
  }
  let pods: PodWire[] = [];
  if (kind === 'podNames') {
    for (const ref of t.podNames ?? []) {
      const i = ref.indexOf('/');
      const ns = i < 0 ? namespace : ref.slice(0, i);
      const name = i < 0 ? ref : ref.slice(i + 1);
      try {
        pods.push(await client.request<PodWire>('GET', objectPath(resources.pods, ns, name), { signal }));
      } catch (e) {
        if (isApiError(e, 404)) throw new TargetError(`pod ${ns}/${name} (podNames) does not exist`);
        throw e;
      }
    }
  } else if (kind === 'podSelector') {
    const namespaces = await listAll<KubeObject>(client, collectionPath(resources.namespaces), selectorString(t.namespaceSelector), signal);
    const podSel = selectorString(t.podSelector);
    for (const ns of namespaces) pods.push(...(await listAll<PodWire>(client, collectionPath(resources.pods, ns.metadata.name), podSel, signal)));
    if (!pods.length) throw new TargetError(`namespaceSelector ${JSON.stringify(selectorString(t.namespaceSelector))} + podSelector ${JSON.stringify(podSel)} select no pod`);
  } else throw new TargetError('the capture names no target');
  pods = pods.filter((p) => p.spec?.nodeName && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
  const byNode = new Map<string, string[]>();
  for (const p of pods) {
    const n = p.spec?.nodeName as string;
    const ips = p.spec?.hostNetwork ? [] : podIps(p);
    // Without its IP the node's filter would not name the pod (and capture everything): wait for it.
    if (!p.spec?.hostNetwork && !ips.length) throw new TargetError(`pod ${p.metadata.namespace ?? namespace}/${p.metadata.name} on node ${n} has no IP yet`);
    byNode.set(n, [...(byNode.get(n) ?? []), ...ips]);
  }
  if (!byNode.size) throw new TargetError('the target pods are not scheduled on any node');
  return [...byNode].map(([name, ips]) => ({ name, os: nodes.get(name) ? nodeOs(nodes.get(name) as KubeObject) : 'linux', podIPs: [...new Set(ips)] }));
}
