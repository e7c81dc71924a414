/**
 * The namespaces Hubble's GetNamespaces answers (what Hubble UI lists), as Cilium's observer keeps
 * them (cilium/cilium pkg/hubble/observer/namespace): every flow written adds its source's and its
 * destination's namespace (when it has one), each stamped with when it was last seen; a namespace not
 * seen for an hour is forgotten (Cilium sweeps every 5 minutes: here on the first batch 5 minutes
 * after the last sweep, and on every listing). The list is sorted by cluster, then namespace, each
 * with this agent's cluster name (Cilium's cluster-name). Hubble Relay asks every agent and merges.
 *
 * On the drain path: one Map store per side of a flow, skipped when the side is the same endpoint
 * object as the previous flow's (the enricher hands out one frozen object per endpoint).
 */
import type { Endpoint, FlowBatch, FlowConsumer } from '../../flow/index.js';

/** GetNamespacesResponse's Namespace. */
export interface HubbleNamespace {
  readonly cluster: string;
  readonly namespace: string;
}

export interface NamespaceTracker extends FlowConsumer {
  /** The namespaces seen within the TTL, sorted (cluster, then namespace). */
  list(): HubbleNamespace[];
}

/** Cilium's namespaceTTL and cleanupInterval. */
export const NAMESPACE_TTL_MS = 60 * 60_000;
export const NAMESPACE_SWEEP_MS = 5 * 60_000;

export function createNamespaceTracker(cluster: string, now: () => number = Date.now, ttlMs = NAMESPACE_TTL_MS): NamespaceTracker {
  /** namespace → last seen (ms). */
  const seen = new Map<string, number>();
  let lastSweep = now();
  let lastSrc: Endpoint | undefined;
  let lastDst: Endpoint | undefined;
  const sweep = (t: number): void => {
    lastSweep = t;
    for (const [ns, at] of seen) if (t - at > ttlMs) seen.delete(ns);
  };
  return {
    consume(batch: FlowBatch): void {
      const t = now();
      const fs = batch.flows;
      for (let i = 0; i < fs.length; i++) {
        const f = fs[i];
        if (f === undefined) continue;
        const s = f.source;
        if (s !== undefined && s !== lastSrc) {
          lastSrc = s;
          if (s.namespace !== '') seen.set(s.namespace, t);
        }
        const d = f.destination;
        if (d !== undefined && d !== lastDst) {
          lastDst = d;
          if (d.namespace !== '') seen.set(d.namespace, t);
        }
      }
      // The same endpoints again in the next batch are stamped again.
      lastSrc = undefined;
      lastDst = undefined;
      if (t - lastSweep >= NAMESPACE_SWEEP_MS) sweep(t);
    },
    list() {
      sweep(now());
      return [...seen.keys()].sort().map((namespace) => ({ cluster, namespace }));
    },
  };
}
