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
  // Oldest first, so the newest owner of a reused IP wins, as it does in a live cache.
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

const norm = (c: IpCache): unknown => ({
  pods: [...c.pods()].map((p) => JSON.stringify(p)).sort(),
  services: [...c.services()].map((p) => JSON.stringify(p)).sort(),
  nodes: [...c.nodes()].map((p) => JSON.stringify(p)).sort(),
  ips: c.ipEntries().map(([ip, e]) => `${ip}=${e.kind}:${'namespace' in e ? e.namespace + '/' : ''}${e.name}`).sort(),
});

/** True when the cache equals the API state (objects and the IP index). */
export async function cacheMatches(client: RestClient, cache: IpCache): Promise<boolean> {
  const want = await expectedCache(client);
  return JSON.stringify(norm(want)) === JSON.stringify(norm(cache));
}

export async function assertCacheMatches(client: RestClient, cache: IpCache): Promise<void> {
  assert.deepEqual(norm(cache), norm(await expectedCache(client)));
}
