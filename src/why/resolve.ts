/**
 * SRC and DST through the API server: a pod's IPs, node and labels; a Service's cluster IPs, ports,
 * selector and EndpointSlices (which endpoints are ready, on which nodes); an IP as the pod or
 * Service that has it; and the NetworkPolicies that select a pod. A missing pod or Service is a
 * ResolveError naming it.
 */
import { collectionPath, isApiError, objectPath, resources, type KubeList, type KubeObject, type RestClient } from '../k8s/index.js';
import { targetText, type TargetSpec } from './target.js';

export class ResolveError extends Error {
  override readonly name = 'ResolveError';
}

export interface PodFacts {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly ips: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
}

export interface EndpointFacts {
  readonly ips: readonly string[];
  readonly ready: boolean;
  readonly node: string;
  readonly pod: string;
}

export interface ServiceInfo {
  readonly namespace: string;
  readonly name: string;
  readonly clusterIps: readonly string[];
  readonly selector: Readonly<Record<string, string>> | undefined;
  readonly ports: readonly { readonly name: string; readonly port: number; readonly protocol: string }[];
  readonly endpoints: readonly EndpointFacts[];
  /** Port name → the endpoints' port numbers (EndpointSlice ports). */
  readonly targetPorts: ReadonlyMap<string, readonly number[]>;
  /** Pods the selector matches (undefined without a selector). */
  readonly selectedPods: number | undefined;
}

export interface Side {
  readonly spec: TargetSpec;
  /** How it is named in messages. */
  readonly text: string;
  readonly ips: readonly string[];
  /** The nodes whose agents saw its traffic. */
  readonly nodes: readonly string[];
  readonly pod?: PodFacts;
  readonly service?: ServiceInfo;
}

interface PodWire extends KubeObject {
  spec: { nodeName?: string };
  status?: { podIP?: string; podIPs?: { ip: string }[]; phase?: string };
}
interface ServiceWire extends KubeObject {
  spec: { clusterIP?: string; clusterIPs?: string[]; selector?: Record<string, string>; ports?: { name?: string; port: number; protocol?: string }[] };
}
interface SliceWire extends KubeObject {
  endpoints?: { addresses: string[]; conditions?: { ready?: boolean }; nodeName?: string; targetRef?: { name?: string } }[];
  ports?: { name?: string; port?: number }[];
}
interface PolicyWire extends KubeObject {
  spec: { podSelector?: LabelSelectorWire; policyTypes?: string[]; egress?: unknown[] };
}
interface LabelSelectorWire {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

function podFacts(p: PodWire): PodFacts {
  const ips = (p.status?.podIPs ?? []).map((x) => x.ip);
  if (ips.length === 0 && p.status?.podIP) ips.push(p.status.podIP);
  return { namespace: p.metadata.namespace ?? '', name: p.metadata.name, node: p.spec.nodeName ?? '', ips, labels: p.metadata.labels ?? {} };
}

function podSide(spec: TargetSpec, p: PodFacts): Side {
  return { spec, text: `pod ${p.namespace}/${p.name}`, ips: p.ips, nodes: p.node ? [p.node] : [], pod: p };
}

/** The pod by name, else the one pod whose name is NAME-<suffix> (a Deployment's or a StatefulSet's). */
async function findPod(client: RestClient, namespace: string, name: string, signal?: AbortSignal): Promise<PodWire> {
  try {
    return await client.request<PodWire>('GET', objectPath(resources.pods, namespace, name), { signal });
  } catch (e) {
    if (!isApiError(e, 404)) throw e;
  }
  const all = await client.request<KubeList<PodWire>>('GET', collectionPath(resources.pods, namespace), { signal });
  const like = all.items.filter((p) => p.metadata.name.startsWith(`${name}-`) && p.status?.phase === 'Running');
  if (like.length === 1) return like[0] as PodWire;
  if (like.length > 1) throw new ResolveError(`pod ${namespace}/${name}: no such pod, and ${like.length} running pods start with ${name}- (${like.slice(0, 5).map((p) => p.metadata.name).join(', ')}): name one`);
  throw new ResolveError(`pod ${namespace}/${name}: no such pod`);
}

async function serviceInfo(client: RestClient, s: ServiceWire, signal?: AbortSignal): Promise<ServiceInfo> {
  const namespace = s.metadata.namespace ?? '';
  const slices = await client.request<KubeList<SliceWire>>('GET', collectionPath(resources.endpointSlices, namespace), {
    query: { labelSelector: `kubernetes.io/service-name=${s.metadata.name}` }, signal,
  });
  const endpoints: EndpointFacts[] = [];
  const targetPorts = new Map<string, number[]>();
  for (const sl of slices.items) {
    for (const e of sl.endpoints ?? []) endpoints.push({ ips: e.addresses, ready: e.conditions?.ready !== false, node: e.nodeName ?? '', pod: e.targetRef?.name ?? '' });
    for (const p of sl.ports ?? []) if (p.port !== undefined) targetPorts.set(p.name ?? '', [...(targetPorts.get(p.name ?? '') ?? []), p.port]);
  }
  const selector = s.spec.selector && Object.keys(s.spec.selector).length > 0 ? s.spec.selector : undefined;
  let selectedPods: number | undefined;
  if (selector) {
    const sel = Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(',');
    selectedPods = (await client.request<KubeList<PodWire>>('GET', collectionPath(resources.pods, namespace), { query: { labelSelector: sel }, signal })).items.length;
  }
  const clusterIps = (s.spec.clusterIPs ?? (s.spec.clusterIP ? [s.spec.clusterIP] : [])).filter((ip) => ip !== 'None');
  return {
    namespace, name: s.metadata.name, clusterIps, selector, endpoints, targetPorts, selectedPods,
    ports: (s.spec.ports ?? []).map((p) => ({ name: p.name ?? '', port: p.port, protocol: p.protocol ?? 'TCP' })),
  };
}

function serviceSide(spec: TargetSpec, svc: ServiceInfo): Side {
  const ready = svc.endpoints.filter((e) => e.ready);
  return {
    spec, text: `service ${svc.namespace}/${svc.name}`, service: svc,
    ips: [...svc.clusterIps, ...svc.endpoints.flatMap((e) => e.ips)],
    nodes: [...new Set(ready.map((e) => e.node).filter(Boolean))],
  };
}

/** One target through the API server. */
export async function resolveSide(client: RestClient, spec: TargetSpec, signal?: AbortSignal): Promise<Side> {
  switch (spec.kind) {
    case 'pod':
      return podSide(spec, podFacts(await findPod(client, spec.namespace, spec.name, signal)));
    case 'service': {
      let s: ServiceWire;
      try {
        s = await client.request<ServiceWire>('GET', objectPath(resources.services, spec.namespace, spec.name), { signal });
      } catch (e) {
        if (isApiError(e, 404)) throw new ResolveError(`service ${spec.namespace}/${spec.name}: no such Service`);
        throw e;
      }
      return serviceSide(spec, await serviceInfo(client, s, signal));
    }
    case 'ip': {
      const pods = await client.request<KubeList<PodWire>>('GET', collectionPath(resources.pods), { query: { fieldSelector: `status.podIP=${spec.ip}` }, signal });
      const pod = pods.items.find((p) => !(p as { spec: { hostNetwork?: boolean } }).spec.hostNetwork);
      if (pod) return { ...podSide(spec, podFacts(pod)), text: `pod ${pod.metadata.namespace}/${pod.metadata.name} (${spec.ip})` };
      const svcs = await client.request<KubeList<ServiceWire>>('GET', collectionPath(resources.services), { signal });
      const svc = svcs.items.find((s) => (s.spec.clusterIPs ?? [s.spec.clusterIP]).includes(spec.ip));
      if (svc) return { ...serviceSide(spec, await serviceInfo(client, svc, signal)), text: `service ${svc.metadata.namespace}/${svc.metadata.name} (${spec.ip})` };
      return { spec, text: spec.ip, ips: [spec.ip], nodes: [] };
    }
    case 'name':
      return { spec, text: targetText({ ...spec, port: undefined }), ips: [], nodes: [] };
  }
}

function selects(sel: LabelSelectorWire | undefined, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(sel?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel?.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const v = labels[e.key];
    const inValues = has && (e.values ?? []).includes(v as string);
    if ((e.operator === 'In' && !inValues) || (e.operator === 'NotIn' && inValues) || (e.operator === 'Exists' && !has) || (e.operator === 'DoesNotExist' && has)) return false;
  }
  return true;
}

/** NetworkPolicies (ns/name) that select `dst` for ingress or `src` for egress. Unreadable (RBAC): an empty list and the reason. */
export async function selectingPolicies(client: RestClient, src: PodFacts | undefined, dst: PodFacts | undefined, signal?: AbortSignal): Promise<{ policies: string[]; note?: string }> {
  const out: string[] = [];
  try {
    for (const [pod, dir] of [[dst, 'Ingress'], [src, 'Egress']] as const) {
      if (!pod) continue;
      const list = await client.request<KubeList<PolicyWire>>('GET', collectionPath(resources.networkPolicies, pod.namespace), { signal });
      for (const p of list.items) {
        const types = p.spec.policyTypes ?? (p.spec.egress ? ['Ingress', 'Egress'] : ['Ingress']);
        if (types.includes(dir) && selects(p.spec.podSelector, pod.labels)) out.push(`${pod.namespace}/${p.metadata.name} (${dir.toLowerCase()})`);
      }
    }
    return { policies: out };
  } catch (e) {
    return { policies: out, note: `NetworkPolicies not read: ${(e as Error).message}` };
  }
}

/** The pods (ns/name) of up to `max` IPs, through the API server; IPs of no pod are left out. */
export async function podsByIp(client: RestClient, ips: readonly string[], signal?: AbortSignal, max = 4): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  await Promise.all(ips.slice(0, max).map(async (ip) => {
    const list = await client.request<KubeList<PodWire>>('GET', collectionPath(resources.pods), { query: { fieldSelector: `status.podIP=${ip}` }, signal }).catch(() => undefined);
    const p = list?.items.find((x) => !(x as { spec: { hostNetwork?: boolean } }).spec.hostNetwork);
    if (p) out.set(ip, `${p.metadata.namespace ?? ''}/${p.metadata.name}`);
  }));
  return out;
}
