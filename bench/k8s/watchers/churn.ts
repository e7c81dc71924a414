/**
 * Endpoint changes at a stated rate: a merge patch of one RetinaEndpoint's spec.labels (one MODIFIED
 * event to every watcher), paced from one clock, at most 32 in flight. Each call's latency as the
 * client saw it is kept, beside the API server's own histogram.
 */
import { objectPath, resources, type RestClient } from '../../../src/k8s/index.js';
import { endpointName } from '../endpoints.js';
import { MARKER_LABEL } from './protocol.js';

/** Patches endpoints first..first+count-1 (modulo `total`) at `perSecond`; the last one carries `marker` in MARKER_LABEL. */
export async function churn(client: RestClient, ns: string, o: { count: number; perSecond: number; total: number; first?: number; marker: string }): Promise<{ seconds: number; latenciesMs: number[]; failed: number }> {
  const t0 = performance.now();
  const latenciesMs: number[] = [];
  let failed = 0;
  const inflight = new Set<Promise<void>>();
  for (let k = 0; k < o.count; k++) {
    const due = t0 + (k * 1000) / o.perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    while (inflight.size >= 32) await Promise.race(inflight);
    const i = ((o.first ?? 0) + k) % o.total;
    const last = k === o.count - 1;
    const labels: Record<string, string> = { version: `c${o.marker}-${k}` };
    if (last) labels[MARKER_LABEL] = o.marker;
    const s = performance.now();
    const p: Promise<void> = client.request('PATCH', objectPath(resources.retinaEndpoints, ns, endpointName(i).name), { contentType: 'application/merge-patch+json', body: { spec: { labels } } })
      .then(() => void latenciesMs.push(performance.now() - s), () => void failed++)
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  return { seconds: (performance.now() - t0) / 1000, latenciesMs, failed };
}

/** The value at quantile q of xs (nearest rank), rounded to 0.1. */
export function quantileOf(xs: readonly number[], q: number): number | null {
  if (!xs.length) return null;
  const v = [...xs].sort((a, b) => a - b);
  return Number((v[Math.min(v.length - 1, Math.floor(q * v.length))] as number).toFixed(1));
}

/** PATCHes one endpoint after another, `everyMs` apart, until stopped: the client-side latency of mutating calls while something else loads the API server. */
export function probe(client: RestClient, ns: string, total: number, everyMs = 100): { stop(): Promise<{ latenciesMs: number[]; failed: number }> } {
  const latenciesMs: number[] = [];
  let failed = 0;
  let stopped = false;
  const loop = (async () => {
    for (let k = 0; !stopped; k++) {
      const s = performance.now();
      await client.request('PATCH', objectPath(resources.retinaEndpoints, ns, endpointName((k * 7919) % total).name), { contentType: 'application/merge-patch+json', body: { spec: { labels: { probe: String(k) } } } })
        .then(() => void latenciesMs.push(performance.now() - s), () => void failed++);
      const left = everyMs - (performance.now() - s);
      if (left > 0) await new Promise((r) => setTimeout(r, left));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { latenciesMs, failed };
    },
  };
}
