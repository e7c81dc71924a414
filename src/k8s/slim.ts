/**
 * Slimming on arrival (Cilium's pkg/k8s/slim idea): each transform keeps what the cache or the
 * operator needs (IPs, name, namespace, owners, allowlisted labels) and drops the rest, so a store of
 * 20 000 objects stays small. IPs are normalised once here.
 */
import { isIP } from 'node:net';
import type { V1ContainerStatus, V1LoadBalancerIngress, V1NodeAddress, V1OwnerReference, V1PodIP } from '@kubernetes/client-node';
import { normalizeIp, type NodeEndpoint, type PodEndpoint, type ServiceEndpoint, type Workload } from '../cache/index.js';
import type { RetinaEndpoint, RetinaEndpointSpec } from './crd/retina-endpoint.js';
import type { KubeObject } from './resources.js';

/** The Pod fields retina-ts reads, as they are on the wire. */
export interface PodWire extends KubeObject {
  spec?: { nodeName?: string; hostNetwork?: boolean };
  status?: { phase?: string; podIP?: string; podIPs?: V1PodIP[]; hostIP?: string; containerStatuses?: V1ContainerStatus[] };
}
export interface ServiceWire extends KubeObject {
  spec?: { type?: string; clusterIP?: string; clusterIPs?: string[]; selector?: Record<string, string> };
  status?: { loadBalancer?: { ingress?: V1LoadBalancerIngress[] } };
}
export interface NodeWire extends KubeObject {
  status?: { addresses?: V1NodeAddress[] };
}

/** Label/annotation keys to keep: exact keys, or prefixes written `prefix*` (e.g. `app.kubernetes.io/*`). */
export type KeyAllowlist = (key: string) => boolean;

export function keyAllowlist(patterns: readonly string[]): KeyAllowlist {
  const exact = new Set(patterns.filter((p) => !p.endsWith('*')));
  const prefixes = patterns.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  return (k) => exact.has(k) || prefixes.some((p) => k.startsWith(p));
}

export function pickKeys(m: Readonly<Record<string, string>> | undefined, allow: KeyAllowlist): Record<string, string> {
  const out: Record<string, string> = {};
  if (!m) return out;
  for (const k of Object.keys(m).sort()) if (allow(k)) out[k] = m[k] as string;
  return out;
}

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});
const frozen = (m: Record<string, string>): Readonly<Record<string, string>> => (Object.keys(m).length ? Object.freeze(m) : EMPTY);

/**
 * The normalised address in `ip`, or undefined when the field is unset (absent, null or ''). Throws,
 * naming the field, on one that is not an address: a number, an object, a host name, `010.1.2.3` (an
 * API server without strict IP validation keeps it; the kernel's flows never carry it and its radix
 * is ambiguous). The reflector then skips and counts that object.
 */
function address(ip: unknown, field: string): string | undefined {
  if (ip === undefined || ip === null || ip === '') return undefined;
  // isIP accepts an IPv6 zone (fe80::1%eth0), which Kubernetes' validation and the kernel's flows never have.
  if (typeof ip !== 'string' || !isIP(ip) || ip.includes('%')) throw new Error(`${field}: ${JSON.stringify(ip)} is not an IP address`);
  return normalizeIp(ip);
}

/** Adds the address of `field` to `out` once. */
/**
 * `ips` frozen in an array of its own length. An array filled by push() keeps V8's first growth
 * (17 slots, about 150 bytes) for good; a pod has one or two IPs, so a copy saves about 2.5 MB of
 * heap at 20 000 RetinaEndpoints (bench/agent/footprint.bench.ts).
 */
function frozenIps(ips: string[]): readonly string[] {
  return Object.freeze(ips.slice());
}

function addAddress(out: string[], ip: unknown, field: string): void {
  const n = address(ip, field);
  if (n !== undefined && !out.includes(n)) out.push(n);
}

/** Pod IPs, primary first, de-duplicated and normalised; throws naming the field on one that is not an address. */
export function podIps(p: PodWire): string[] {
  const out: string[] = [];
  addAddress(out, p.status?.podIP, 'status.podIP');
  (p.status?.podIPs ?? []).forEach((x, i) => addAddress(out, x?.ip, `status.podIPs[${i}].ip`));
  return out;
}

/** The workload a user deployed: ReplicaSet web-5d4f8c9b7 -> Deployment web, Job x-28000000 -> CronJob x. */
export function resolveWorkload(owner: Workload, labels?: Readonly<Record<string, string>>): Workload {
  if (owner.kind === 'ReplicaSet') {
    const hash = labels?.['pod-template-hash'];
    if (hash && owner.name.endsWith(`-${hash}`)) return { kind: 'Deployment', name: owner.name.slice(0, -hash.length - 1) };
    const m = /^(.+)-[bcdfghjklmnpqrstvwxz2456789]{5,10}$/.exec(owner.name);
    if (m) return { kind: 'Deployment', name: m[1] as string };
  } else if (owner.kind === 'Job') {
    const m = /^(.+)-\d{8,}$/.exec(owner.name);
    if (m) return { kind: 'CronJob', name: m[1] as string };
  }
  return owner;
}

const workloadsOf = (owners: readonly Workload[], labels: Readonly<Record<string, string>>): readonly Workload[] =>
  Object.freeze(owners.map((o) => Object.freeze(resolveWorkload(o, labels))));

/**
 * Shares equal values between slim objects: the pods of one ReplicaSet have the same namespace, node
 * IPs, labels, owners and workloads, so 20 000 endpoints hold a few hundred distinct copies instead of
 * 20 000 of each. Bounded: past `max` entries it starts over (sharing drops, correctness does not).
 */
export class Interner {
  #m = new Map<string, unknown>();
  constructor(readonly max = 50_000) {}
  string(s: string): string {
    return this.#get(s, () => s);
  }
  /** An equal frozen value already seen, or `v` (frozen). `id` is its identity, e.g. JSON. */
  value<T>(id: string, make: () => T): T {
    return this.#get(`\u0000${id}`, make);
  }
  #get<T>(id: string, make: () => T): T {
    const hit = this.#m.get(id);
    if (hit !== undefined) return hit as T;
    if (this.#m.size >= this.max) this.#m.clear();
    const v = make();
    this.#m.set(id, v);
    return v;
  }
}

/** Remote context: a RetinaEndpoint into the cache's pod entry (its spec.labels, unlike Retina). */
export function endpointFromRetinaEndpoint(re: RetinaEndpoint, intern: Interner = new Interner(0)): PodEndpoint | undefined {
  const s: Partial<RetinaEndpointSpec> = re.spec ?? {};
  const ips: string[] = [];
  addAddress(ips, s.podIP, 'spec.podIP');
  (s.podIPs ?? []).forEach((ip, i) => addAddress(ips, ip, `spec.podIPs[${i}]`));
  if (!ips.length) return undefined;
  const nodeIP = address(s.nodeIP, 'spec.nodeIP');
  const labelsIn = s.labels ?? {};
  const labels = intern.value(`l${JSON.stringify(labelsIn)}`, () => frozen(Object.fromEntries(Object.entries(labelsIn).map(([k, v]) => [intern.string(k), intern.string(v)]))));
  const annotations = s.annotations && Object.keys(s.annotations).length ? intern.value(`a${JSON.stringify(s.annotations)}`, () => frozen({ ...s.annotations })) : EMPTY;
  const refs = (s.ownerReferences ?? []).map((o) => ({ kind: o.kind, name: o.name }));
  const owners = intern.value(`o${JSON.stringify(refs)}`, () => Object.freeze(refs.map((o) => Object.freeze({ kind: intern.string(o.kind), name: intern.string(o.name) }))));
  const workloads = intern.value(`w${JSON.stringify(refs)}${labelsIn['pod-template-hash'] ?? ''}`, () => workloadsOf(owners, labels));
  return Object.freeze({
    kind: 'pod', namespace: intern.string(re.metadata.namespace ?? ''), name: re.metadata.name, ips: frozenIps(ips),
    nodeIP: nodeIP === undefined ? undefined : intern.string(nodeIP), labels, annotations, owners, workloads,
  });
}

/** A pod that holds IPs of its own: not host-network, has an IP, not finished. */
export function podIsEndpoint(p: PodWire): boolean {
  const phase = p.status?.phase;
  return !p.spec?.hostNetwork && Boolean(p.status?.podIP) && phase !== 'Succeeded' && phase !== 'Failed';
}

export function controllerOwners(p: { metadata: { ownerReferences?: V1OwnerReference[] } }): Workload[] {
  const refs = p.metadata.ownerReferences ?? [];
  const ctl = refs.filter((r) => r.controller);
  return (ctl.length ? ctl : refs).map((r) => ({ kind: r.kind, name: r.name }));
}

/** Local context: one of this node's Pods into the cache's pod entry. */
export function podTransform(allowLabels: KeyAllowlist, allowAnnotations: KeyAllowlist): (p: PodWire) => PodEndpoint | undefined {
  return (p) => {
    if (!podIsEndpoint(p)) return undefined;
    const labels = frozen(pickKeys(p.metadata.labels, allowLabels));
    const owners = Object.freeze(controllerOwners(p).map((o) => Object.freeze(o)));
    return Object.freeze({
      kind: 'pod', namespace: p.metadata.namespace ?? '', name: p.metadata.name, ips: frozenIps(podIps(p)),
      nodeIP: address(p.status?.hostIP, 'status.hostIP'), labels,
      annotations: frozen(pickKeys(p.metadata.annotations, allowAnnotations)), owners,
      workloads: workloadsOf(owners, pickKeys(p.metadata.labels, (k) => k === 'pod-template-hash')),
    });
  };
}

/** Services: ClusterIPs (not None) and load-balancer ingress IPs. */
export function serviceTransform(s: ServiceWire): ServiceEndpoint | undefined {
  const ips: string[] = [];
  const add = (ip: unknown, field: string): void => {
    if (ip !== 'None') addAddress(ips, ip, field); // headless
  };
  add(s.spec?.clusterIP, 'spec.clusterIP');
  (s.spec?.clusterIPs ?? []).forEach((ip, i) => add(ip, `spec.clusterIPs[${i}]`));
  (s.status?.loadBalancer?.ingress ?? []).forEach((ing, i) => add(ing?.ip, `status.loadBalancer.ingress[${i}].ip`));
  if (!ips.length) return undefined;
  return Object.freeze({ kind: 'service', namespace: s.metadata.namespace ?? '', name: s.metadata.name, ips: frozenIps(ips), selector: frozen({ ...(s.spec?.selector ?? {}) }) });
}

/** Nodes: InternalIP and ExternalIP addresses (v4 and v6), and the zone label. */
export function nodeTransform(n: NodeWire): NodeEndpoint | undefined {
  const ips: string[] = [];
  // InternalIPs first: the first address is the one peers dial (Hubble's Peer service).
  for (const type of ['InternalIP', 'ExternalIP']) {
    (n.status?.addresses ?? []).forEach((a, i) => {
      if (a?.type === type) addAddress(ips, a.address, `status.addresses[${i}].address`);
    });
  }
  const zone = n.metadata.labels?.['topology.kubernetes.io/zone'] ?? n.metadata.labels?.['failure-domain.beta.kubernetes.io/zone'];
  return Object.freeze({ kind: 'node', name: n.metadata.name, ips: frozenIps(ips), zone });
}
