/**
 * The agent's IP cache: pods (from RetinaEndpoints or local Pods), services and nodes, each indexed by
 * every IP it owns (IPv4 and IPv6). An IP that moves to a new owner is taken from the old one (IP
 * reuse); deleting an object removes only the IPs that still point at it, and an IP it had taken goes
 * back to the newest earlier claimant that still holds it. Lookups go pod, then
 * service, then node (Retina's order). Imports nothing: the k8s layer fills it, the enricher reads it.
 */

export interface Workload {
  readonly kind: string;
  readonly name: string;
}

export interface PodEndpoint {
  readonly kind: 'pod';
  readonly namespace: string;
  readonly name: string;
  readonly ips: readonly string[];
  readonly nodeIP: string | undefined;
  /** The node the pod runs on, when the source knows it (a Pod's spec.nodeName); else found from nodeIP. */
  readonly nodeName?: string | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** Direct owners (e.g. ReplicaSet web-5d4f8c9b7). */
  readonly owners: readonly Workload[];
  /** Owners resolved to what the user deployed (e.g. Deployment web). */
  readonly workloads: readonly Workload[];
}

export interface ServiceEndpoint {
  readonly kind: 'service';
  readonly namespace: string;
  readonly name: string;
  /** ClusterIPs and load-balancer ingress IPs. */
  readonly ips: readonly string[];
  readonly selector: Readonly<Record<string, string>>;
}

export interface NodeEndpoint {
  readonly kind: 'node';
  readonly name: string;
  readonly ips: readonly string[];
  readonly zone: string | undefined;
}

export type Endpoint = PodEndpoint | ServiceEndpoint | NodeEndpoint;

export interface IpCacheStats {
  readonly pods: number;
  readonly services: number;
  readonly nodes: number;
  readonly podIps: number;
  readonly serviceIps: number;
  readonly nodeIps: number;
}

/**
 * Entries by (namespace, name) in a map per namespace, not by a joined "namespace/name" key: the
 * entry's own name string is the key, so 20 000 pods cost no key strings (a joined key is a cons
 * string plus its flattened copy, about 120 bytes each), and by every IP they own.
 */
class Index<E extends Endpoint> {
  readonly #byNs = new Map<string, Map<string, E>>();
  readonly byIp = new Map<string, E>();
  /**
   * An IP's earlier claimants that still hold it, oldest first, as [namespace, name]: its owner took it
   * from them (IP reuse while the old object lingers, a terminating pod's RetinaEndpoint). When the
   * owner goes or drops the IP, the newest of them that still claims it owns it again. Only IPs with
   * more than one claimant have an entry, so it stays small.
   */
  readonly #earlier = new Map<string, [string, string][]>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(namespace: string, name: string): E | undefined {
    return this.#byNs.get(namespace)?.get(name);
  }

  *values(): IterableIterator<E> {
    for (const m of this.#byNs.values()) yield* m.values();
  }

  upsert(namespace: string, e: E): void {
    let m = this.#byNs.get(namespace);
    if (!m) this.#byNs.set(namespace, (m = new Map()));
    const old = m.get(e.name);
    m.set(e.name, e);
    if (!old) this.#size++;
    if (old) for (const ip of old.ips) if (!e.ips.includes(ip)) this.#release(ip, old, namespace);
    for (const ip of e.ips) {
      const cur = this.byIp.get(ip);
      if (cur && cur !== old && cur !== e) this.#remember(ip, 'namespace' in cur ? cur.namespace : '', cur.name, namespace, e.name);
      this.byIp.set(ip, e);
    }
  }

  delete(namespace: string, name: string): boolean {
    const m = this.#byNs.get(namespace);
    const old = m?.get(name);
    if (!m || !old) return false;
    m.delete(name);
    if (!m.size) this.#byNs.delete(namespace);
    this.#size--;
    for (const ip of old.ips) this.#release(ip, old, namespace);
    return true;
  }

  clear(): void {
    this.#byNs.clear();
    this.byIp.clear();
    this.#earlier.clear();
    this.#size = 0;
  }

  /** `namespace/name` took `ip` from `fromNs/from`, which keeps claiming it. */
  #remember(ip: string, fromNs: string, from: string, namespace: string, name: string): void {
    const list = (this.#earlier.get(ip) ?? []).filter(([n, x]) => !(x === name && n === namespace) && !(x === from && n === fromNs));
    list.push([fromNs, from]);
    this.#earlier.set(ip, list);
  }

  /** `old` (of `namespace`) no longer claims `ip`: when it owned it, the newest earlier claimant that still does owns it again. */
  #release(ip: string, old: E, namespace: string): void {
    const list = this.#earlier.get(ip);
    if (this.byIp.get(ip) !== old) {
      // Not the owner: it is no longer an earlier claimant either.
      if (list) this.#setEarlier(ip, list.filter(([n, x]) => !(x === old.name && n === namespace)));
      return;
    }
    this.byIp.delete(ip);
    while (list?.length) {
      const [n, x] = list.pop() as [string, string];
      const back = this.get(n, x);
      if (back?.ips.includes(ip)) {
        this.byIp.set(ip, back);
        break;
      }
    }
    if (list) this.#setEarlier(ip, list);
  }

  #setEarlier(ip: string, list: [string, string][]): void {
    if (list.length) this.#earlier.set(ip, list);
    else this.#earlier.delete(ip);
  }
}

/** One change to the cache, as `IpCache.subscribe` tells it (replaying them in order rebuilds the cache: the pipeline's workers do). */
export type IpCacheChange =
  | { readonly op: 'upsertPod'; readonly e: PodEndpoint }
  | { readonly op: 'deletePod'; readonly namespace: string; readonly name: string }
  | { readonly op: 'upsertService'; readonly e: ServiceEndpoint }
  | { readonly op: 'deleteService'; readonly namespace: string; readonly name: string }
  | { readonly op: 'upsertNode'; readonly e: NodeEndpoint }
  | { readonly op: 'deleteNode'; readonly name: string }
  | { readonly op: 'clear' };

/** Applies one change (a mirror of another thread's cache). */
export function applyIpCacheChange(cache: IpCache, c: IpCacheChange): void {
  switch (c.op) {
    case 'upsertPod': return cache.upsertPod(c.e);
    case 'deletePod': return void cache.deletePod(c.namespace, c.name);
    case 'upsertService': return cache.upsertService(c.e);
    case 'deleteService': return void cache.deleteService(c.namespace, c.name);
    case 'upsertNode': return cache.upsertNode(c.e);
    case 'deleteNode': return void cache.deleteNode(c.name);
    case 'clear': return cache.clear();
  }
}

export class IpCache {
  readonly #pods = new Index<PodEndpoint>();
  readonly #services = new Index<ServiceEndpoint>();
  readonly #nodes = new Index<NodeEndpoint>();
  #version = 0;
  #topologyVersion = 0;
  readonly #listeners = new Set<(c: IpCacheChange) => void>();

  /** Calls `listener` after every change, until disposed (the pipeline's workers mirror the cache so). */
  subscribe(listener: (c: IpCacheChange) => void): Disposable {
    this.#listeners.add(listener);
    return { [Symbol.dispose]: () => void this.#listeners.delete(listener) };
  }
  #tell(c: IpCacheChange): void {
    if (this.#listeners.size) for (const l of this.#listeners) l(c);
  }

  /** Bumped by every change (upsert, delete, clear): readers compare it to drop memoised lookups. */
  get version(): number {
    return this.#version;
  }
  /** Bumped by every change to services or nodes (what a pod's service and zone derive from). */
  get topologyVersion(): number {
    return this.#topologyVersion;
  }

  upsertPod(e: PodEndpoint): void {
    this.#version++;
    this.#pods.upsert(e.namespace, e);
    this.#tell({ op: 'upsertPod', e });
  }
  deletePod(namespace: string, name: string): boolean {
    this.#version++;
    this.#tell({ op: 'deletePod', namespace, name });
    return this.#pods.delete(namespace, name);
  }
  upsertService(e: ServiceEndpoint): void {
    this.#topology();
    this.#services.upsert(e.namespace, e);
    this.#tell({ op: 'upsertService', e });
  }
  deleteService(namespace: string, name: string): boolean {
    this.#topology();
    this.#tell({ op: 'deleteService', namespace, name });
    return this.#services.delete(namespace, name);
  }
  upsertNode(e: NodeEndpoint): void {
    this.#topology();
    this.#nodes.upsert('', e);
    this.#tell({ op: 'upsertNode', e });
  }
  deleteNode(name: string): boolean {
    this.#topology();
    this.#tell({ op: 'deleteNode', name });
    return this.#nodes.delete('', name);
  }
  #topology(): void {
    this.#version++;
    this.#topologyVersion++;
  }

  lookup(ip: string): Endpoint | undefined {
    const k = normalizeIp(ip);
    return this.#pods.byIp.get(k) ?? this.#services.byIp.get(k) ?? this.#nodes.byIp.get(k);
  }
  /** The node owning this address, even when a pod (host network) or a service claims it too. */
  nodeByIp(ip: string): NodeEndpoint | undefined {
    return this.#nodes.byIp.get(normalizeIp(ip));
  }
  pod(namespace: string, name: string): PodEndpoint | undefined {
    return this.#pods.get(namespace, name);
  }
  service(namespace: string, name: string): ServiceEndpoint | undefined {
    return this.#services.get(namespace, name);
  }
  node(name: string): NodeEndpoint | undefined {
    return this.#nodes.get('', name);
  }
  pods(): IterableIterator<PodEndpoint> {
    return this.#pods.values();
  }
  services(): IterableIterator<ServiceEndpoint> {
    return this.#services.values();
  }
  nodes(): IterableIterator<NodeEndpoint> {
    return this.#nodes.values();
  }
  /** Every indexed IP and what it resolves to, for comparisons in tests. */
  ipEntries(): [string, Endpoint][] {
    return [...this.#pods.byIp, ...this.#services.byIp, ...this.#nodes.byIp];
  }

  stats(): IpCacheStats {
    return {
      pods: this.#pods.size, services: this.#services.size, nodes: this.#nodes.size,
      podIps: this.#pods.byIp.size, serviceIps: this.#services.byIp.size, nodeIps: this.#nodes.byIp.size,
    };
  }

  clear(): void {
    this.#topology();
    this.#pods.clear();
    this.#services.clear();
    this.#nodes.clear();
    this.#tell({ op: 'clear' });
  }
}

/**
 * One spelling per address, so "FD00::1" and "fd00:0:0::1" find the same entry. IPv4 passes through;
 * IPv6 is lower-cased and zero-compressed as RFC 5952 says (the API server writes it that way too).
 */
export function normalizeIp(ip: string): string {
  if (!ip.includes(':')) return ip;
  const s = ip.toLowerCase();
  if (s.includes('.')) return s; // IPv4-mapped forms: leave as written
  const halves = s.split('::');
  if (halves.length > 2) return s;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const groups = [...head, ...Array<string>(Math.max(0, fill)).fill('0'), ...tail].map((g) => g.replace(/^0+(?=.)/, ''));
  if (groups.length !== 8) return s;
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const out = best < 0 ? groups.join(':') : [groups.slice(0, best).join(':'), groups.slice(best + bestLen).join(':')].join('::');
  // The address as given when it was already in canonical form (what API servers send), else one flat
  // string: a template literal's result is a cons string of its parts (about 100 bytes more per
  // address, kept as long as the pod is in the cache).
  return out === ip ? ip : out;
}
