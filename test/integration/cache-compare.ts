/** Builds what the agent's IP cache should hold from the API's own state, and compares. */
import assert from 'node:assert/strict';
import { IpCache } from '../../src/cache/index.js';
import { endpointFromRetinaEndpoint, nodeTransform, resources, serviceTransform, type NodeWire, type RestClient, type RetinaEndpoint, type ServiceWire } from '../../src/k8s/index.js';
import { listAll } from './harness.js';

/** The API state through the same slim transforms into a fresh cache. */
export async function expectedCache(client: RestClient): Promise<IpCache> {
  const want = new IpCache();
  const [res, svcs, nodes] = await Promise.all([
    listAll<RetinaEndpoint>(client, resources.retinaEndpoints),
    listAll<ServiceWire>(client, resources.services),
    listAll<NodeWire>(client, resources.nodes),
  ]);
  // Oldest first, so the last changed claimant of a reused IP owns it (a live cache may differ: see norm).
  for (const r of res.sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion))) {
    const e = endpointFromRetinaEndpoint(r);
    if (e) want.upsertPod(e);
  }
  for (const s of svcs) {
    const e = serviceTransform(s);
    if (e) want.upsertService(e);
  }
  for (const n of nodes) {
    const e = nodeTransform(n);
    if (e) want.upsertNode(e);
  }
  return want;
}

const label = (e: { kind: string; name: string; namespace?: string }): string => `${e.kind}:${e.namespace !== undefined ? e.namespace + '/' : ''}${e.name}`;

/**
 * The cache as comparable lists. `claims` (from the API's state) names every object claiming each IP: an
 * IP that more than one object of a kind claims (a reused IP while the old pod's RetinaEndpoint lingers)
 * may be owned by any of them, since which one wins depends on the order changes arrive in (a re-list
 * sends objects in name order), so its owner reads "one of ..." when it is one of them. An IP owned by
 * nobody, or by an object not claiming it, still differs.
 */
const norm = (c: IpCache, claims: Map<string, Set<string>>): unknown => ({
  pods: [...c.pods()].map((p) => JSON.stringify(p)).sort(),
  services: [...c.services()].map((p) => JSON.stringify(p)).sort(),
  nodes: [...c.nodes()].map((p) => JSON.stringify(p)).sort(),
  ips: c.ipEntries().map(([ip, e]) => {
    const owner = label(e);
    const all = claims.get(`${e.kind} ${ip}`);
    return `${ip}=${all && all.size > 1 && all.has(owner) ? `one of ${[...all].sort().join(', ')}` : owner}`;
  }).sort(),
});

/** Each IP's claimants by kind ("pod 10.0.0.1" -> labels), from every object in the cache. */
function claimsOf(c: IpCache): Map<string, Set<string>> {
  const claims = new Map<string, Set<string>>();
  for (const e of [...c.pods(), ...c.services(), ...c.nodes()]) {
    for (const ip of e.ips) {
      const k = `${e.kind} ${ip}`;
      let s = claims.get(k);
      if (!s) claims.set(k, (s = new Set()));
      s.add(label(e));
    }
  }
  return claims;
}

/** The cache and the API state, each as comparable lists. */
async function both(client: RestClient, cache: IpCache): Promise<{ have: unknown; want: unknown }> {
  const want = await expectedCache(client);
  const claims = claimsOf(want);
  return { have: norm(cache, claims), want: norm(want, claims) };
}

/** True when the cache equals the API state (objects and the IP index). */
export async function cacheMatches(client: RestClient, cache: IpCache): Promise<boolean> {
  const { have, want } = await both(client, cache);
  return JSON.stringify(have) === JSON.stringify(want);
}

export async function assertCacheMatches(client: RestClient, cache: IpCache): Promise<void> {
  const { have, want } = await both(client, cache);
  assert.deepEqual(have, want);
}
