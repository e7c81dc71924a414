/**
 * The enricher's lookup over the agent's IP cache: an address becomes the Endpoint a flow carries.
 *
 * - a pod's IP (v4 or v6): namespace, pod name, workload (the resolved owner, `workloads[0]`:
 *   Deployment, StatefulSet, DaemonSet, Job...), service (a Service of the pod's namespace whose
 *   selector matches the pod's labels, found on first use), node name (the pod's node, else the
 *   node owning its nodeIP), the node's zone, and the pod's labels;
 * - a Service IP: namespace and service name, podName '';
 * - a node IP: node name and zone only.
 *
 * One Endpoint object per cache entry (a WeakMap keyed by the cache's object, which the cache
 * replaces on every update), and one memo from address to Endpoint, dropped whenever the cache
 * changes (`IpCache.version`): a flow's lookup is one Map read and allocates nothing. Endpoints
 * are rebuilt when services or nodes change (`topologyVersion`), as their service and zone derive
 * from those.
 */
import type { IpCache, NodeEndpoint, PodEndpoint, ServiceEndpoint } from '../cache/index.js';
import type { Endpoint } from '../flow/index.js';

export interface CacheLookupOptions {
  /** Most addresses remembered (found or not) between two cache changes; default 65 536. */
  readonly maxRemembered?: number;
}

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** True when every key=value of a non-empty selector is among the labels (Kubernetes' rule). */
export function selectorMatches(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean {
  let any = false;
  for (const k in selector) {
    any = true;
    if (labels[k] !== selector[k]) return false;
  }
  return any;
}

/**
 * The one address-to-endpoint lookup type: what the enricher reads (pods first, then services, then
 * nodes). Declared here, beside its implementation over the IP cache, and re-exported by index.ts.
 */
export interface EndpointLookup {
  byIp(ip: string): Endpoint | undefined;
}

/** The enricher's EndpointLookup over the agent's IP cache. */
export function cacheLookup(cache: IpCache, opts: CacheLookupOptions = {}): EndpointLookup {
  const max = opts.maxRemembered ?? 65_536;
  const memo = new Map<string, Endpoint | null>();
  let version = -1;
  let topology = -1;
  let views = new WeakMap<PodEndpoint | ServiceEndpoint | NodeEndpoint, Endpoint>();
  let servicesByNs: Map<string, ServiceEndpoint[]> | undefined;

  function serviceOf(pod: PodEndpoint): string {
    if (servicesByNs === undefined) {
      servicesByNs = new Map();
      const all = [...cache.services()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const s of all) {
        let l = servicesByNs.get(s.namespace);
        if (l === undefined) servicesByNs.set(s.namespace, (l = []));
        l.push(s);
      }
    }
    for (const s of servicesByNs.get(pod.namespace) ?? []) if (selectorMatches(s.selector, pod.labels)) return s.name;
    return '';
  }

  function podView(pod: PodEndpoint): Endpoint {
    const node = pod.nodeName ? cache.node(pod.nodeName) : pod.nodeIP ? cache.nodeByIp(pod.nodeIP) : undefined;
    const w = pod.workloads[0];
    let service: string | undefined;
    return {
      namespace: pod.namespace,
      podName: pod.name,
      workloadKind: w?.kind ?? '',
      workloadName: w?.name ?? '',
      get service(): string {
        return (service ??= serviceOf(pod));
      },
      nodeName: pod.nodeName || node?.name || '',
      zone: node?.zone ?? '',
      labels: pod.labels,
    };
  }

  function view(e: PodEndpoint | ServiceEndpoint | NodeEndpoint): Endpoint {
    let v = views.get(e);
    if (v !== undefined) return v;
    if (e.kind === 'pod') v = podView(e);
    else if (e.kind === 'service') v = { namespace: e.namespace, podName: '', workloadKind: '', workloadName: '', service: e.name, nodeName: '', zone: '', labels: NO_LABELS };
    else v = { namespace: '', podName: '', workloadKind: '', workloadName: '', service: '', nodeName: e.name, zone: e.zone ?? '', labels: NO_LABELS };
    views.set(e, v);
    return v;
  }

  function refresh(): void {
    memo.clear();
    version = cache.version;
    if (cache.topologyVersion !== topology) {
      topology = cache.topologyVersion;
      views = new WeakMap();
      servicesByNs = undefined;
    }
  }

  return {
    byIp(ip: string): Endpoint | undefined {
      if (cache.version !== version) refresh();
      let v = memo.get(ip);
      if (v === undefined) {
        const e = cache.lookup(ip);
        v = e === undefined ? null : view(e);
        if (memo.size >= max) memo.clear();
        memo.set(ip, v);
      }
      return v ?? undefined;
    },
  };
}
