/**
 * One bad object never blocks a node, against the real API server: this node's Pods are watched
 * (local context) while one of them carries a pod IP the API server accepts but that is not an
 * address (`010.71.0.2`: leading zeros, kept by API servers without strict IP validation). That pod
 * is counted and skipped; the node's other pods are cached, a pod created afterwards arrives through
 * the same watch, and a good pod updated into the bad shape leaves the cache instead of staying
 * stale. And the size caps with the API server's own pagination: a watch event over the cap makes the
 * reflector relist, and the pages over the cap are fetched again, smaller, with the same continue
 * token, until the big object comes in alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IpCache } from '../../src/cache/index.js';
import { Reflector, collectionPath, isApiError, objectPath, resources, startAgentWatch, type AgentWatch, type KubeObject, type ResourceRef, type RestClient } from '../../src/k8s/index.js';
import { createNamespace, deleteNamespace, eventually, startCluster, type Cluster } from './harness.js';
import { testLog, uniqueId } from './operator-helpers.js';

describe('reflector: a pod the transform rejects does not block the node', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let agent: AgentWatch | undefined;
  const cache = new IpCache();
  const ns = uniqueId('rej');
  const node = uniqueId('rej-node');
  const rejected: string[] = [];

  /** A pod bound to `node` (no kubelet or kwok runs it), then its status set to Running with `ip`. */
  async function pod(name: string, ip: string): Promise<void> {
    await client.request('POST', collectionPath(resources.pods, ns), {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels: { app: name } }, spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }] } },
    });
    await setIp(name, ip);
  }
  async function setIp(name: string, ip: string): Promise<void> {
    await client.request('PATCH', `${objectPath(resources.pods, ns, name)}/status`, {
      body: { status: { phase: 'Running', hostIP: '172.18.0.99', podIP: ip, podIPs: [{ ip }] } }, contentType: 'application/merge-patch+json',
    });
  }

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    await createNamespace(client, ns);
    // A node of our own, without kwok's annotation: nothing rewrites its pods' status.
    await client.request('POST', collectionPath(resources.nodes), { body: { apiVersion: 'v1', kind: 'Node', metadata: { name: node } } });
    await pod('good-a', '10.71.0.1');
    await pod('good-b', '10.71.0.3');
  });

  after(async () => {
    await agent?.[Symbol.asyncDispose]();
    await deleteNamespace(client, ns);
    await client.request('DELETE', objectPath(resources.nodes, undefined, node)).catch(() => undefined);
    await cluster[Symbol.asyncDispose]();
  });

  it('skips and counts the bad pod, caches the others, and keeps watching', async (t) => {
    try {
      await pod('bad', '010.71.0.2');
    } catch (e) {
      // An API server with strict IP validation refuses the shape; then it cannot reach an agent either.
      if (isApiError(e, 422)) assert.fail(`this API server refuses 010.71.0.2 (${e.message}); find another shape it accepts that the transform rejects`);
      throw e;
    }
    const stored = await client.request<{ status?: { podIP?: string } }>('GET', objectPath(resources.pods, ns, 'bad'));
    assert.equal(stored.status?.podIP, '010.71.0.2', 'the API server kept the odd IP');

    agent = startAgentWatch({
      client, cache, remoteContext: false, nodeName: node, log: testLog('agent'), inactivityTimeoutMs: 120_000,
      onRejected: (reason, resource) => rejected.push(`${resource}:${reason}`),
    });
    await agent.waitForSync();
    assert.deepEqual([...cache.pods()].filter((p) => p.namespace === ns).map((p) => p.name).sort(), ['good-a', 'good-b']);
    assert.equal(cache.lookup('10.71.0.1')?.name, 'good-a');
    assert.deepEqual(rejected, ['pods:transform']);

    // The watch goes on: a pod created now arrives.
    await pod('good-c', '10.71.0.4');
    await eventually('good-c in the cache', 30_000, () => cache.lookup('10.71.0.4')?.name === 'good-c');

    // A good pod updated into the bad shape leaves the cache (its old IP is not attributed to it any more).
    await setIp('good-b', '010.71.0.3');
    await eventually('good-b gone from the cache', 30_000, () => cache.pod(ns, 'good-b') === undefined);
    assert.equal(cache.lookup('10.71.0.3'), undefined);
    assert.ok(rejected.length >= 2 && rejected.every((r) => r === 'pods:transform'), rejected.join(', '));
    const podStats = agent.stats().find((s) => s.resource === 'pods');
    assert.equal(podStats?.errors, 0, 'no list/watch error: nothing was retried');
    t.diagnostic(`pods reflector: ${JSON.stringify(podStats)}`);
  });

  it('relists after a watch event over the cap, and shrinks LIST pages over the cap until the big object fits alone', async (t) => {
    const configMaps: ResourceRef = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };
    const cm = (name: string, bytes: number): unknown => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { x: 'y'.repeat(bytes) } });
    for (const n of ['small-1', 'small-2', 'small-3']) await client.request('POST', collectionPath(configMaps, ns), { body: cm(n, 500) });
    // The big one's size on the wire decides the caps: its watch event is over one, it alone fits the other.
    await client.request('POST', collectionPath(configMaps, ns), { body: cm('big', 20_000) });
    const bigBytes = JSON.stringify(await client.request('GET', objectPath(configMaps, ns, 'big'))).length;
    await client.request('DELETE', objectPath(configMaps, ns, 'big'));
    const reasons: string[] = [];
    const r = new Reflector<KubeObject, string>({
      client, resource: configMaps, namespace: ns, transform: (o) => o.metadata.name, log: testLog('reflector'),
      maxEventBytes: bigBytes - 1000, maxListBytes: bigBytes + 400, backoffInitialMs: 50, backoffMaxMs: 200,
      onRejected: (reason) => reasons.push(reason),
    });
    const h = r.start();
    t.after(() => h[Symbol.asyncDispose]());
    await eventually('listed', 30_000, () => r.synced);
    assert.deepEqual(reasons, [], 'the small ones fit');
    await client.request('POST', collectionPath(configMaps, ns), { body: cm('big', 20_000) });
    await eventually('big listed', 30_000, () => r.get(`${ns}/big`) === 'big');
    for (const k of ['small-1', 'small-2', 'small-3']) assert.equal(r.get(`${ns}/${k}`), k);
    assert.equal(reasons[0], 'watch_event_too_large');
    assert.ok(reasons.slice(1).length > 0 && reasons.slice(1).every((x) => x === 'list_page_too_large'), reasons.join(', '));
    assert.equal(r.stats().lists, 2, 'one relist');
    t.diagnostic(`big object ${bigBytes} bytes; rejections: ${reasons.join(', ')}; ${JSON.stringify(r.stats())}`);
    // A later change still arrives through the watch.
    await client.request('POST', collectionPath(configMaps, ns), { body: cm('small-4', 500) });
    await eventually('small-4 watched', 30_000, () => r.get(`${ns}/small-4`) === 'small-4');
  });
});
