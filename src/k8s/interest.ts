/**
 * The IPs of interest (Retina's filter map): the pods the current MetricsConfiguration or the
 * annotations select, plus the API server, IPv4 and IPv6. Kernel-side filters (packetparser) mirror
 * this set. Pod events update it incrementally, a new selection rebuilds it from the IP cache, and
 * listeners hear only about real changes, at most once per `coalesceMs`.
 *
 * Structurally the plugin contract's `IpInterest` (src/plugin sits above src/k8s, so it is not
 * imported here; src/cli hands this object to the plugin manager as it is).
 */
import type { IpCache, PodEndpoint } from '../cache/index.js';
import { normalizeIp } from '../cache/index.js';
import { systemClock, type Clock } from './clock.js';

/** Which pods are of interest. */
export type InterestSelection =
  /** No MetricsConfiguration applies: only the API server. */
  | { readonly kind: 'none' }
  /** A spec without a namespace filter: every pod the cache knows (Retina selects none then). */
  | { readonly kind: 'all' }
  | { readonly kind: 'include'; readonly namespaces: readonly string[] }
  | { readonly kind: 'exclude'; readonly namespaces: readonly string[] }
  /** Annotation mode: pods of these (annotated) namespaces, and pods annotated `retina.sh: observe`. */
  | { readonly kind: 'annotations'; readonly namespaces: readonly string[] };

export const OBSERVE_ANNOTATION = 'retina.sh';
export const OBSERVE_VALUE = 'observe';

/** True when a pod carries `retina.sh: observe`. */
export const podAnnotated = (p: PodEndpoint): boolean => p.annotations[OBSERVE_ANNOTATION] === OBSERVE_VALUE;

export interface InterestSetOptions {
  readonly cache: IpCache;
  /** bypassLookupIPOfInterest: consumers report every packet; the set is still kept. */
  readonly bypass: boolean;
  readonly coalesceMs?: number;
  readonly clock?: Clock;
}

export interface InterestSet extends Disposable {
  readonly bypass: boolean;
  /** The current set; a snapshot that later changes do not touch. */
  ips(): ReadonlySet<string>;
  onChange(listener: () => void): Disposable;
  select(selection: InterestSelection): void;
  selection(): InterestSelection;
  /** The API server's addresses (always of interest). */
  setApiServerIps(ips: Iterable<string>): void;
  /**
   * A pod changed in the cache (already applied there): `old` is what it was (undefined when added),
   * `next` what it is (undefined when deleted). Updates the set incrementally.
   */
  podChanged(old: PodEndpoint | undefined, next: PodEndpoint | undefined): void;
  /** Notifies now if the set changed (tests; the timer does it otherwise); returns whether it did. */
  flush(): boolean;
  /** Full recomputations (a new selection) and notifications so far, and the set's size. */
  stats(): { readonly rebuilds: number; readonly changes: number; readonly size: number };
}

function selector(sel: InterestSelection): (p: PodEndpoint) => boolean {
  switch (sel.kind) {
    case 'none': return () => false;
    case 'all': return () => true;
    case 'include': { const ns = new Set(sel.namespaces); return (p) => ns.has(p.namespace); }
    case 'exclude': { const ns = new Set(sel.namespaces); return (p) => !ns.has(p.namespace); }
    case 'annotations': { const ns = new Set(sel.namespaces); return (p) => ns.has(p.namespace) || podAnnotated(p); }
  }
}

/**
 * The set from scratch: every IP (normalised in the cache) that a selected pod claims, plus the API
 * server's. While a pod that lost its IP to another (IP reuse) still lists it, the IP stays of
 * interest if either is selected.
 */
export function computeInterest(cache: IpCache, sel: InterestSelection, apiServer: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const ip of apiServer) out.add(normalizeIp(ip));
  if (sel.kind === 'none') return out;
  const take = selector(sel);
  for (const p of cache.pods()) if (take(p)) for (const ip of p.ips) out.add(ip);
  return out;
}

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>): boolean => {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
};

/**
 * Kept incrementally: a count of claims per IP (selected pods and the API server), changed by each
 * pod event in O(its IPs); a new selection rebuilds it from the cache once. Notifications are
 * coalesced over `coalesceMs` and compare only the IPs touched since the last one.
 */
export function createInterestSet(o: InterestSetOptions): InterestSet {
  const clock = o.clock ?? systemClock;
  const coalesceMs = o.coalesceMs ?? 200;
  const listeners = new Set<() => void>();
  const claims = new Map<string, number>();
  const touched = new Set<string>();
  let sel: InterestSelection = { kind: 'none' };
  let take = selector(sel);
  let rebuild = false;
  let api: string[] = [];
  let snapshot: ReadonlySet<string> = new Set();
  let timer: Disposable | undefined;
  let disposed = false;
  let rebuilds = 0;
  let changes = 0;

  const claim = (ip: string, d: 1 | -1): void => {
    const n = (claims.get(ip) ?? 0) + d;
    if (n > 0) claims.set(ip, n);
    else claims.delete(ip);
    touched.add(ip);
  };

  function schedule(): void {
    if (timer || disposed) return;
    timer = clock.setTimeout(flush, coalesceMs);
  }

  function flush(): boolean {
    timer?.[Symbol.dispose]();
    timer = undefined;
    if (disposed) return false;
    let changed: boolean;
    if (rebuild) {
      rebuild = false;
      rebuilds++;
      claims.clear();
      for (const ip of api) claim(ip, 1);
      for (const p of o.cache.pods()) if (take(p)) for (const ip of p.ips) claim(ip, 1);
      changed = !sameSet(new Set(claims.keys()), snapshot);
    } else {
      changed = false;
      for (const ip of touched) {
        if (claims.has(ip) !== snapshot.has(ip)) {
          changed = true;
          break;
        }
      }
    }
    touched.clear();
    if (!changed) return false;
    snapshot = new Set(claims.keys());
    changes++;
    for (const l of [...listeners]) {
      try {
        l();
      } catch {
        // a listener's failure is its own; the others still hear about the change
      }
    }
    return true;
  }

  return {
    bypass: o.bypass,
    ips: () => snapshot,
    onChange(listener) {
      listeners.add(listener);
      return { [Symbol.dispose]: () => void listeners.delete(listener) };
    },
    select(next) {
      if (JSON.stringify(next) === JSON.stringify(sel)) return;
      sel = next;
      take = selector(next);
      rebuild = true;
      schedule();
    },
    selection: () => sel,
    setApiServerIps(ips) {
      const next = [...new Set([...ips].map(normalizeIp))].sort();
      if (next.join() === api.join()) return;
      for (const ip of api) claim(ip, -1);
      for (const ip of next) claim(ip, 1);
      api = next;
      schedule();
    },
    podChanged(old, next) {
      if (rebuild) return; // the pending rebuild reads the cache
      const was = old !== undefined && take(old);
      const is = next !== undefined && take(next);
      if (!was && !is) return;
      if (was) for (const ip of (old as PodEndpoint).ips) claim(ip, -1);
      if (is) for (const ip of (next as PodEndpoint).ips) claim(ip, 1);
      schedule();
    },
    flush,
    stats: () => ({ rebuilds, changes, size: snapshot.size }),
    [Symbol.dispose]() {
      disposed = true;
      timer?.[Symbol.dispose]();
      timer = undefined;
      listeners.clear();
    },
  };
}
