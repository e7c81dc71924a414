/**
 * Context labels: which label names a context option produces, and the memoised values of one side
 * of a flow (each preceded by SEP, ready to be part of a series key). A side's value depends only on
 * its endpoint, its IP and (with `port`) its port, so it is built once per (endpoint, ip, port) and
 * found again through one Map read keyed by the endpoint object (or the IP, for a side the
 * enricher did not know). So a side's labels are ordered
 * endpoint labels first, then `ip`, then `port` (label order carries no meaning in Prometheus).
 */
import type { Endpoint } from '../../flow/index.js';
import { SEP, cleanLabelValue } from '../series.js';
import type { ContextLabel } from '../spec.js';

const UNKNOWN = 'unknown';

/** A series of a slot whose fixed labels vary from flow to flow (a drop's reason), by index. */
export interface PrefixedSeries {
  readonly prefix: string;
  readonly index: number;
}
const ENDPOINT_LABELS: readonly ContextLabel[] = ['namespace', 'podname', 'workload', 'service', 'zone'];

function ordered(labels: readonly ContextLabel[]): ContextLabel[] {
  const eps = labels.filter((l) => ENDPOINT_LABELS.includes(l));
  return [...eps, ...(labels.includes('ip') ? ['ip' as const] : []), ...(labels.includes('port') ? ['port' as const] : [])];
}

/**
 * Label names for one side, in the order its values come: `source_podname`, or `podname` locally.
 * The pod labels (metricsPodLabelsAllowlist, as `label_<key>`) follow the endpoint labels, on a side
 * that has any context label (a side the spec does not label stays unlabelled).
 */
export function contextLabelNames(labels: readonly ContextLabel[], prefix: string, podLabelNames: readonly string[] = []): string[] {
  const out: string[] = [];
  const ord = ordered(labels);
  for (const l of ord) {
    if (l === 'ip' || l === 'port') continue;
    if (l === 'workload') out.push(`${prefix}workload_kind`, `${prefix}workload_name`);
    else out.push(`${prefix}${l}`);
  }
  if (ord.length) for (const n of podLabelNames) out.push(`${prefix}${n}`);
  for (const l of ord) if (l === 'ip' || l === 'port') out.push(`${prefix}${l}`);
  return out;
}

/** A stable name for a side's label set: sides with the same signature share their values. */
export function sideSignature(labels: readonly ContextLabel[]): string {
  return ordered(labels).join(',');
}

const text = (v: string | undefined): string => (v ? cleanLabelValue(v) : UNKNOWN);

function endpointFragment(labels: readonly ContextLabel[], ep: Endpoint | undefined, podLabels: readonly string[]): string {
  let s = '';
  for (const k of podLabels) s += SEP + cleanLabelValue(ep?.labels[k] ?? '');
  return endpointLabels(labels, ep) + s;
}

function endpointLabels(labels: readonly ContextLabel[], ep: Endpoint | undefined): string {
  let s = '';
  for (const l of labels) {
    switch (l) {
      case 'namespace': s += SEP + text(ep?.namespace); break;
      case 'podname': s += SEP + text(ep?.podName); break;
      case 'workload': s += SEP + text(ep?.workloadKind) + SEP + text(ep?.workloadName); break;
      case 'service': s += SEP + text(ep?.service); break;
      case 'zone': s += SEP + text(ep?.zone); break;
      default: break;
    }
  }
  return s;
}

const isL4 = (p: number): boolean => p === 6 || p === 17 || p === 132;

const REPLY_SUFFIX = [SEP + 'false', SEP + 'true', SEP + UNKNOWN] as const;

/** 0 false, 1 true, 2 unknown: the index of a reply variant. */
export const replyIndex = (r: boolean | undefined): number => (r === undefined ? 2 : r ? 1 : 0);

/**
 * One distinct context-label value string (a series key's tail) and the series the module found for
 * it, by slot (the index in its family), so that a flow with a known tail reaches its series
 * without hashing anything. The indexes are good while no series was removed since they were
 * found: `valid(removals)` forgets them all when the removal count has moved.
 */
export class Tail {
  /** Series index by slot, -1 when none is known. */
  readonly index: number[];
  /** For slots whose prefix varies (drop reasons): the last few (prefix, series) used in the slot. */
  prefixed: (PrefixedSeries[] | undefined)[] | undefined = undefined;
  /** The removal count when the indexes were last checked. */
  #removals = 0;
  #replies: Tail[] | undefined;
  constructor(readonly key: string, nSlots: number) {
    this.index = new Array<number>(nSlots).fill(-1);
  }
  /** This tail, its indexes forgotten if series were removed since they were found. */
  valid(removals: number): this {
    if (removals !== this.#removals) {
      this.#removals = removals;
      this.index.fill(-1);
      this.prefixed = undefined;
    }
    return this;
  }
  /** This tail followed by an `is_reply` value. */
  reply(i: number, budget: Budget): Tail {
    const r = (this.#replies ??= [0, 1, 2].map((k) => budget.tail(this.key + REPLY_SUFFIX[k])));
    return r[i] as Tail;
  }
}

/** One side's value for one (endpoint, ip[, port]), with the tails built from it. */
export class SideKey {
  /**
   * Remote context, this key as the source: destination key → tail. Weak: a deleted pod's key (and
   * its endpoint) must not live on in the pairs of every source that sent to it.
   */
  pairs: WeakMap<SideKey, Tail> | undefined = undefined;
  /** Local context: the tail of this side alone. */
  own: Tail | undefined = undefined;
  ports: Map<number, SideKey> | undefined = undefined;
  /** The key of the same endpoint with another IP (a dual-stack pod). */
  other: SideKey | undefined = undefined;
  /**
   * @param inScope whether the endpoint passes the spec's namespace filter; undefined when the key
   * stands for every endpoint (a side without labels): then ask the filter.
   */
  constructor(readonly ep: Endpoint | undefined, readonly ip: string, readonly frag: string, readonly inScope: boolean | undefined) {}
}

/** Counts memo objects, so the caches can be dropped when they grow past their bound. */
export class Budget {
  used = 0;
  constructor(readonly nSlots: number) {}
  tail(key: string): Tail {
    this.used++;
    return new Tail(key, this.nSlots);
  }
}

/** The memoised values of one side label set. */
export class SideSpec {
  readonly #labels: ContextLabel[];
  readonly #withIp: boolean;
  readonly #withPort: boolean;
  readonly #none: string;
  readonly #podLabels: readonly string[];
  /** Survives `reset`: an Endpoint object stands for one cache entry's content. */
  #frags = new WeakMap<Endpoint, string>();
  /**
   * Enriched sides, by endpoint object (its first IP's key; others chained through `other`). Weak:
   * a pod's endpoint object goes when the pod leaves the cache, and its key with it; a Map kept every
   * deleted pod's key, tails and endpoint (about 1.7 KB a pod) until the memo budget's reset, which
   * at the default budget came after some 100 000 pods (test/churn/memo-retention.test.ts).
   */
  #byEp = new WeakMap<Endpoint, SideKey>();
  /** Sides without an endpoint, by IP. */
  #byIp = new Map<string, SideKey>();
  /** The key when the side has no labels at all. */
  #empty: SideKey | undefined;

  /**
   * @param scope the namespace filter (undefined: none), remembered per key.
   * @param podLabels pod label keys whose values follow the endpoint labels (on a side with any label).
   */
  constructor(labels: readonly ContextLabel[], readonly budget: Budget, readonly scope: ((ep: Endpoint) => boolean) | undefined, podLabels: readonly string[] = []) {
    const ord = ordered(labels);
    this.#labels = ord.filter((l) => ENDPOINT_LABELS.includes(l));
    this.#withIp = ord.includes('ip');
    this.#withPort = ord.includes('port');
    this.#podLabels = ord.length ? podLabels : [];
    this.#none = endpointFragment(this.#labels, undefined, this.#podLabels);
    this.#empty = ord.length === 0 ? new SideKey(undefined, '', '', undefined) : undefined;
  }

  #frag(ep: Endpoint | undefined): string {
    if (ep === undefined || (this.#labels.length === 0 && this.#podLabels.length === 0)) return this.#none;
    let s = this.#frags.get(ep);
    if (s === undefined) this.#frags.set(ep, (s = endpointFragment(this.#labels, ep, this.#podLabels)));
    return s;
  }

  #make(ep: Endpoint | undefined, ip: string): SideKey {
    this.budget.used++;
    const inScope = this.scope === undefined || (ep !== undefined && this.scope(ep));
    return new SideKey(ep, ip, this.#withIp ? this.#frag(ep) + SEP + ip : this.#frag(ep), inScope);
  }

  #ofIp(ep: Endpoint | undefined, ip: string): SideKey {
    let k = this.#byIp.get(ip);
    if (k === undefined || k.ep !== ep) this.#byIp.set(ip, (k = this.#make(ep, ip)));
    return k;
  }

  /** The side of (ep, ip): one Map read keyed by the endpoint object, or by the IP when there is none. */
  key(ep: Endpoint | undefined, ip: string, port: number, proto: number): SideKey {
    if (this.#empty !== undefined) return this.#empty;
    let k: SideKey | undefined;
    if (ep !== undefined) {
      k = this.#byEp.get(ep);
      if (k === undefined) {
        this.#byEp.set(ep, (k = this.#make(ep, ip)));
      } else if (this.#withIp && k.ip !== ip) {
        let o: SideKey = k;
        let n = 1;
        for (; o.ip !== ip && o.other !== undefined; n++) o = o.other;
        if (o.ip === ip) k = o;
        else if (n < 4) k = o.other = this.#make(ep, ip); // a pod's IPv4 and IPv6, a node's addresses
        else k = this.#ofIp(ep, ip); // one endpoint standing for many addresses
      }
    } else {
      k = this.#ofIp(undefined, ip);
    }
    if (!this.#withPort) return k;
    const p = isL4(proto) ? port : 0;
    const ports = (k.ports ??= new Map());
    let kp = ports.get(p);
    if (kp === undefined) {
      ports.set(p, (kp = new SideKey(ep, ip, k.frag + SEP + (p ? String(p) : UNKNOWN), k.inScope)));
      this.budget.used++;
    }
    return kp;
  }

  reset(): void {
    this.#byEp = new WeakMap();
    this.#byIp = new Map();
    if (this.#empty !== undefined) this.#empty = new SideKey(undefined, '', '', undefined);
  }
}
