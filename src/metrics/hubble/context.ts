/**
 * Cilium's context options on our enriched flows: the label names an entry's options add
 * (labelsContext, sourceContext, destinationContext, and the pod-label allowlist) and their values
 * for one flow, memoised per side (an endpoint object, or an IP the enricher did not know, and the
 * flow's direction when the entry has per-direction overrides).
 *
 * Values follow Cilium's pkg/hubble/metrics/api/context.go, read from our Endpoint instead of
 * Cilium's: `pod` is `namespace/name`, `pod-name` the name, `pod-short` the name without its
 * ReplicaSet and pod hashes, `workload-name` the workload (a Deployment, not its ReplicaSet),
 * `workload` the same behind `namespace/`, `app`
 * the first of the labels app.kubernetes.io/name, app, k8s-app (in the order Cilium's sorted label
 * list meets them), `identity` the pod's labels as Cilium writes them (`k8s:key=value`, sorted, with
 * `k8s:io.kubernetes.pod.namespace`), `reserved-identity` the reserved label Cilium would give the
 * address (below), `dns` the flow's DNS names (our flows carry none: empty, so the next identifier
 * of a `a|b` list is used), `ip` the address. An empty value falls through to the next identifier
 * of the list, as in Cilium.
 *
 * Reserved identities from what the enricher knows: no endpoint at all is `reserved:world` (an
 * address outside the cluster), a node is `reserved:host` (this node) or `reserved:remote-node`, an
 * API-server address `reserved:kube-apiserver`; pods and Services have none.
 */
import type { ContextIdentifier, HubbleContextLabel, HubbleMetricSpec } from '../../config/index.js';
import type { Endpoint, Flow, TrafficDirection } from '../../flow/index.js';
import { SEP, cleanLabelValue } from '../series.js';

export const WORLD = 'reserved:world';
const NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
/** Cilium's app labels, in the order a sorted `k8s:key=value` list meets them. */
const APP_LABELS = ['app.kubernetes.io/name', 'app', 'k8s-app'];
const SHORT_POD = /^(.+?)(-[a-z0-9]+){1,2}$/;

export interface Reserved {
  /** This agent's node: its address is `reserved:host`, other nodes' `reserved:remote-node`. */
  readonly nodeName: string | undefined;
  readonly isApiServer: ((ip: string) => boolean) | undefined;
}

type Side = 'source' | 'destination';

interface SideSpec {
  readonly side: Side;
  /** labelsContext labels of this side, without the side's prefix: ip, pod, namespace, workload, app. */
  readonly labels: readonly string[];
  /**
   * The side's context identifiers for flows of no overriding direction (`sourceContext`; [] when only
   * the per-direction ones are set), or undefined when none of the three is set: no `source` label.
   */
  readonly ids: readonly ContextIdentifier[] | undefined;
  readonly egress: readonly ContextIdentifier[] | undefined;
  readonly ingress: readonly ContextIdentifier[] | undefined;
  readonly podLabels: readonly string[];
}

/** Cilium's app label value of an endpoint ('' without one). */
export function appOf(ep: Endpoint | undefined): string {
  if (!ep) return '';
  for (const k of APP_LABELS) {
    const v = ep.labels[k];
    if (v) return v;
  }
  return '';
}

const identities = new WeakMap<Endpoint, string>();

/** Cilium's identity labels of a pod endpoint, joined by `,` (as the `identity` context writes them). */
export function identityOf(ep: Endpoint): string {
  let s = identities.get(ep);
  if (s === undefined) {
    const labels = Object.keys(ep.labels).map((k) => `k8s:${k}=${ep.labels[k] ?? ''}`);
    if (ep.podName && ep.namespace && ep.labels[NAMESPACE_LABEL] === undefined) labels.push(`k8s:${NAMESPACE_LABEL}=${ep.namespace}`);
    identities.set(ep, (s = labels.sort().join(',')));
  }
  return s;
}

export function reservedOf(ep: Endpoint | undefined, ip: string, r: Reserved): string {
  if (r.isApiServer?.(ip)) return 'reserved:kube-apiserver';
  if (ep === undefined) return WORLD;
  if (!ep.podName && !ep.service && ep.nodeName) return r.nodeName === undefined || ep.nodeName === r.nodeName ? 'reserved:host' : 'reserved:remote-node';
  return '';
}

function idValue(id: ContextIdentifier, ep: Endpoint | undefined, ip: string, r: Reserved): string {
  switch (id) {
    case 'namespace': return ep?.namespace ?? '';
    case 'pod': {
      const name = ep?.podName ?? '';
      return ep?.namespace ? `${ep.namespace}/${name}` : name;
    }
    case 'pod-short': {
      const name = (ep?.podName ?? '').replace(SHORT_POD, '$1');
      return ep?.namespace ? `${ep.namespace}/${name}` : name;
    }
    case 'pod-name': return ep?.podName ?? '';
    case 'workload': {
      const name = ep?.workloadName ?? '';
      return name && ep?.namespace ? `${ep.namespace}/${name}` : name;
    }
    case 'workload-name': return ep?.workloadName ?? '';
    case 'app': return appOf(ep);
    case 'ip': return ip;
    case 'identity': {
      const reserved = reservedOf(ep, ip, r);
      return reserved || (ep ? identityOf(ep) : '');
    }
    case 'reserved-identity': return reservedOf(ep, ip, r);
    case 'dns': return '';
  }
}

function labelValue(l: string, ep: Endpoint | undefined, ip: string): string {
  switch (l) {
    case 'ip': return ip;
    case 'pod': return ep?.podName ?? '';
    case 'namespace': return ep?.namespace ?? '';
    case 'workload': return ep?.workloadName ?? '';
    default: return appOf(ep);
  }
}

const DIRECTIONS: readonly TrafficDirection[] = ['INGRESS', 'EGRESS', 'UNKNOWN'];
const DIRECTION_VALUES = [SEP + 'ingress', SEP + 'egress', SEP + 'unknown'] as const;
const directionIndex = (d: TrafficDirection): number => (d === 'INGRESS' ? 0 : d === 'EGRESS' ? 1 : 2);

/**
 * One side's values (each preceded by SEP), made once per (endpoint or address, direction) and kept
 * as one object, so that a flow finds its tail through object-keyed Maps and the tail string is the
 * same string object every time (its hash computed once, not per flow).
 */
export class Frag {
  /** Source fragments only: destination fragment → tails by direction index (one slot without traffic_direction). */
  pairs: Map<Frag, (Tail | undefined)[]> | undefined = undefined;
  constructor(readonly s: string) {}
}

/** A flow's context values as one object: families find their series through it by identity. */
export class Tail {
  constructor(readonly s: string) {}
}

/** One side's memoised fragments. */
class SideValues {
  /** By direction index (one memo without per-direction overrides): endpoint → address → fragment. */
  #byEp: WeakMap<Endpoint, Map<string, Frag>>[];
  #byIp: Map<string, Frag>[];
  readonly #perDirection: boolean;
  readonly #empty: Frag | undefined;

  constructor(readonly spec: SideSpec, readonly reserved: Reserved, private readonly budget: { used: number }) {
    this.#perDirection = spec.ids !== undefined && (spec.egress !== undefined || spec.ingress !== undefined);
    this.#byEp = [];
    this.#byIp = [];
    this.reset();
    this.#empty = spec.labels.length === 0 && spec.ids === undefined && spec.podLabels.length === 0 ? new Frag('') : undefined;
  }

  reset(): void {
    const n = this.#perDirection ? DIRECTIONS.length : 1;
    this.#byEp = Array.from({ length: n }, () => new WeakMap());
    this.#byIp = Array.from({ length: n }, () => new Map());
  }

  #make(ep: Endpoint | undefined, ip: string, direction: TrafficDirection): Frag {
    this.budget.used++;
    const s = this.spec;
    let out = '';
    for (const l of s.labels) out += SEP + cleanLabelValue(labelValue(l, ep, ip));
    if (s.ids !== undefined) {
      const ids = (direction === 'INGRESS' ? s.ingress : direction === 'EGRESS' ? s.egress : undefined) ?? s.ids;
      let v = '';
      for (const id of ids) {
        v = idValue(id, ep, ip, this.reserved);
        if (v !== '') break;
      }
      out += SEP + cleanLabelValue(v);
    }
    for (const k of s.podLabels) out += SEP + cleanLabelValue(ep?.labels[k] ?? '');
    return new Frag(out);
  }

  get(ep: Endpoint | undefined, ip: string, direction: TrafficDirection): Frag {
    if (this.#empty !== undefined) return this.#empty;
    const d = this.#perDirection ? directionIndex(direction) : 0;
    if (ep === undefined) {
      const memo = this.#byIp[d] as Map<string, Frag>;
      let v = memo.get(ip);
      if (v === undefined) memo.set(ip, (v = this.#make(undefined, ip, direction)));
      return v;
    }
    const memo = this.#byEp[d] as WeakMap<Endpoint, Map<string, Frag>>;
    let ips = memo.get(ep);
    if (ips === undefined) memo.set(ep, (ips = new Map()));
    let v = ips.get(ip);
    if (v === undefined) ips.set(ip, (v = this.#make(ep, ip, direction)));
    return v;
  }
}

/**
 * A side has its label when any of its three context options is set (Retina's Hubble chart sets only
 * `sourceEgressContext=pod;destinationIngressContext=pod`): flows of another direction then take the
 * plain option's identifiers, or none (an empty value).
 */
function sideIds(plain: readonly ContextIdentifier[], egress: readonly ContextIdentifier[] | undefined, ingress: readonly ContextIdentifier[] | undefined): readonly ContextIdentifier[] | undefined {
  return plain.length || egress?.length || ingress?.length ? plain : undefined;
}

/** Where a pod's identity sits in a family's tail (split at SEP: context label k at index k + 1). */
export interface PodCheck {
  readonly kind: 'nsname' | 'name' | 'ip' | 'pair';
  readonly at: number;
  /** For `pair`: the namespace's index. */
  readonly ns: number;
}

/** The context labels of one metric entry: their names, and their values for a flow. */
export class HubbleContext {
  readonly names: readonly string[];
  readonly #src: SideValues;
  readonly #dst: SideValues;
  readonly #direction: boolean;
  readonly checks: readonly PodCheck[];
  /** Fragments and tails made since the memos were last dropped. */
  readonly #budget = { used: 0 };
  readonly #maxMemo: number;
  /** The last flow asked for and its tail: handlers sharing this context compute a flow's tail once. */
  #lastFlow: Readonly<Flow> | undefined = undefined;
  #lastTail: Tail = new Tail('');
  /** Moves when the memos start afresh: whoever keeps Tails drops them then. */
  generation = 0;

  /** A signature of what the labels depend on: entries with the same one share a context. */
  static signature(m: HubbleMetricSpec): string {
    return JSON.stringify([m.labels, m.source, m.destination, m.sourceEgress, m.sourceIngress, m.destinationEgress, m.destinationIngress]);
  }

  constructor(m: HubbleMetricSpec, podLabels: readonly string[], podLabelNames: readonly string[], reserved: Reserved, maxMemo = 1 << 18) {
    this.#maxMemo = maxMemo;
    const side = (s: Side): SideSpec => ({
      side: s,
      labels: m.labels.filter((l) => l.startsWith(s + '_')).map((l) => l.slice(s.length + 1)),
      ids: sideIds(s === 'source' ? m.source : m.destination, s === 'source' ? m.sourceEgress : m.destinationEgress, s === 'source' ? m.sourceIngress : m.destinationIngress),
      egress: s === 'source' ? m.sourceEgress : m.destinationEgress,
      ingress: s === 'source' ? m.sourceIngress : m.destinationIngress,
      podLabels,
    });
    this.#src = new SideValues(side('source'), reserved, this.#budget);
    this.#dst = new SideValues(side('destination'), reserved, this.#budget);
    this.#direction = m.labels.includes('traffic_direction' as HubbleContextLabel);
    const names: string[] = [];
    for (const sv of [this.#src, this.#dst]) {
      const s = sv.spec.side;
      for (const l of sv.spec.labels) names.push(`${s}_${l}`);
      if (sv.spec.ids !== undefined) names.push(s);
      for (const n of podLabelNames) names.push(`${s}_${n}`);
    }
    if (this.#direction) names.push('traffic_direction');
    this.names = names;
    const checks: PodCheck[] = [];
    const at = (n: string): number => names.indexOf(n) + 1;
    for (const s of ['source', 'destination'] as const) {
      const ids = new Set([...(s === 'source' ? [m.source, m.sourceEgress, m.sourceIngress] : [m.destination, m.destinationEgress, m.destinationIngress]).flatMap((l) => l ?? [])]);
      if (at(s) > 0) {
        if (ids.has('pod')) checks.push({ kind: 'nsname', at: at(s), ns: 0 });
        if (ids.has('pod-name')) checks.push({ kind: 'name', at: at(s), ns: 0 });
        if (ids.has('ip')) checks.push({ kind: 'ip', at: at(s), ns: 0 });
      }
      if (at(`${s}_pod`) > 0) checks.push(at(`${s}_namespace`) > 0 ? { kind: 'pair', at: at(`${s}_pod`), ns: at(`${s}_namespace`) } : { kind: 'name', at: at(`${s}_pod`), ns: 0 });
      if (at(`${s}_ip`) > 0) checks.push({ kind: 'ip', at: at(`${s}_ip`), ns: 0 });
    }
    this.checks = checks;
  }

  /**
   * The tail (context values, each after SEP) of a flow: the same Tail object for the same
   * (source, destination, direction), found through object-keyed Maps. Past `maxMemo` fragments and
   * tails (addresses outside the cluster are unbounded) the memos start afresh.
   */
  tail(f: Readonly<Flow>): Tail {
    if (f === this.#lastFlow) return this.#lastTail;
    return this.#tail(f);
  }

  /** Forgets the last flow (at each batch: a producer may hand the same object again, changed). */
  newBatch(): void {
    this.#lastFlow = undefined;
  }

  #tail(f: Readonly<Flow>): Tail {
    if (this.#budget.used > this.#maxMemo) {
      this.#src.reset();
      this.#dst.reset();
      this.#budget.used = 0;
      this.generation++;
    }
    const src = this.#src.get(f.source, f.srcIp, f.direction);
    const dst = this.#dst.get(f.destination, f.dstIp, f.direction);
    const pairs = (src.pairs ??= new Map());
    let tails = pairs.get(dst);
    if (tails === undefined) pairs.set(dst, (tails = this.#direction ? [undefined, undefined, undefined] : [undefined]));
    const d = this.#direction ? directionIndex(f.direction) : 0;
    let t = tails[d];
    if (t === undefined) {
      this.#budget.used++;
      tails[d] = t = new Tail(src.s + dst.s + (this.#direction ? DIRECTION_VALUES[d] : ''));
    }
    this.#lastFlow = f;
    this.#lastTail = t;
    return t;
  }
}
