/**
 * The agent's IP cache equals the API state: after churn (creates, updates, deletes, IP reuse, IPv4 and
 * IPv6), after an API server restart, and after a forced 410 (objects removed and etcd compacted while
 * the API server was down, so the agent's resourceVersion is too old when it reconnects).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IpCache } from '../../src/cache/index.js';
import { collectionPath, objectPath, resources, startAgentWatch, type AgentWatch, type RestClient, type RetinaEndpoint } from '../../src/k8s/index.js';
import { assertCacheMatches, cacheMatches } from './cache-compare.js';
import { compactEtcd, createNamespace, deleteNamespace, etcdDelete, eventually, restartApiserver, startApiserver, startCluster, stopApiserver, type Cluster } from './harness.js';
import { testLog, uniqueId } from './operator-helpers.js';

function re(ns: string, name: string, ips: string[], labels: Record<string, string> = {}): RetinaEndpoint {
  return {
    apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint',
    metadata: { name, namespace: ns },
    spec: { podIP: ips[0] as string, podIPs: ips, nodeIP: '172.18.0.10', labels, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${name.split('-')[0]}-7d4b9c8f6d` }] },
  };
}

async function parallel<T>(items: T[], n: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < items.length) await fn(items[i++] as T);
  }));
}

describe('agent IP cache against the API server', { timeout: 600_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let agent: AgentWatch;
  const cache = new IpCache();
  const ns = uniqueId('cache');
  const create = (r: RetinaEndpoint): Promise<unknown> => client.request('POST', collectionPath(resources.retinaEndpoints, ns), { body: r });
  const del = (name: string): Promise<unknown> => client.request('DELETE', objectPath(resources.retinaEndpoints, ns, name));
  const settle = (what: string, ms = 30_000): Promise<boolean> => eventually(what, ms, () => cacheMatches(client, cache), 500);

  before(async () => {
    cluster = await startCluster({ disruptive: true });
    client = cluster.client;
    await createNamespace(client, ns);
    // IPv4 endpoints, IPv6 endpoints and dual-stack ones.
    const initial: RetinaEndpoint[] = [];
    for (let i = 0; i < 300; i++) {
      const v4 = `10.60.${i >> 8}.${i & 255}`;
      const v6 = `fd00:60::${i.toString(16)}`;
      initial.push(re(ns, `app${i % 7}-pod${i}`, i % 3 === 0 ? [v6] : i % 3 === 1 ? [v4, v6] : [v4], { app: `app${i % 7}` }));
    }
    await parallel(initial, 16, create);
    await client.request('POST', collectionPath(resources.services, ns), {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'dual', namespace: ns }, spec: { ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv4', 'IPv6'], selector: { app: 'app1' }, ports: [{ port: 80 }] } },
    });
    await client.request('POST', collectionPath(resources.services, ns), {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'headless', namespace: ns }, spec: { clusterIP: 'None', selector: { app: 'app2' }, ports: [{ port: 80 }] } },
    });
    agent = startAgentWatch({ client, cache, remoteContext: true, log: testLog('agent'), inactivityTimeoutMs: 120_000 });
    await agent.waitForSync();
  });

  after(async () => {
    await agent?.[Symbol.asyncDispose]();
    if (client) await deleteNamespace(client, ns);
    await cluster?.[Symbol.asyncDispose]();
  });

  it('starts equal to the API state, IPv4 and IPv6, pods, services and nodes', async () => {
    await settle('initial sync');
    await assertCacheMatches(client, cache);
    // Written by hand: assertCacheMatches builds its side through the same slim transforms.
    assert.deepStrictEqual(cache.pod(ns, 'app1-pod1'), {
      kind: 'pod', namespace: ns, name: 'app1-pod1', ips: ['10.60.0.1', 'fd00:60::1'], nodeIP: '172.18.0.10', labels: { app: 'app1' },
      annotations: {}, owners: [{ kind: 'ReplicaSet', name: 'app1-7d4b9c8f6d' }], workloads: [{ kind: 'Deployment', name: 'app1' }],
    });
    assert.equal(cache.lookup('fd00:60::')?.name, 'app0-pod0', 'fd00:60::0 as written in the RetinaEndpoint is stored as fd00:60::');
    assert.equal(cache.lookup('fd00:60::3')?.kind, 'pod');
    assert.equal(cache.lookup('FD00:60:0::3')?.kind, 'pod', 'IPv6 spelled differently finds the same entry');
    const dual = cache.service(ns, 'dual');
    assert.ok(dual && dual.ips.length === 2 && dual.ips.some((ip) => ip.includes(':')), 'dual-stack service has both ClusterIPs');
    assert.equal(cache.service(ns, 'headless'), undefined, 'headless services own no IP');
    assert.equal(cache.lookup('fd00:18::10')?.kind, 'node', 'node IPv6 address');
    assert.equal(cache.lookup('172.18.0.10')?.kind, 'node');
  });

  it('equals the API state after churn with IP reuse', async () => {
    // delete 50, re-create 25 of their IPs under new names (IP reuse), relabel 50, move 20 to new IPs
    await parallel(Array.from({ length: 50 }, (_, i) => i * 2), 16, (i) => del(`app${i % 7}-pod${i}`));
    await parallel(Array.from({ length: 25 }, (_, k) => k * 4), 16, (i) => create(re(ns, `reuse-pod${i}`, [`10.60.${i >> 8}.${i & 255}`, `fd00:60::${i.toString(16)}`])));
    await parallel(Array.from({ length: 50 }, (_, k) => k * 2 + 1), 16, (i) =>
      client.request('PATCH', objectPath(resources.retinaEndpoints, ns, `app${i % 7}-pod${i}`), { contentType: 'application/merge-patch+json', body: { spec: { labels: { app: `app${i % 7}`, v: '2' } } } }));
    await parallel(Array.from({ length: 20 }, (_, k) => k * 2 + 101), 8, (i) =>
      client.request('PATCH', objectPath(resources.retinaEndpoints, ns, `app${i % 7}-pod${i}`), { contentType: 'application/merge-patch+json', body: { spec: { podIP: `10.61.0.${i}`, podIPs: [`10.61.0.${i}`] } } }));
    await client.request('DELETE', objectPath(resources.services, ns, 'dual'));
    await settle('after churn');
    await assertCacheMatches(client, cache);
    assert.equal(cache.lookup('10.60.0.4')?.kind === 'pod' && (cache.lookup('10.60.0.4') as { name: string }).name, 'reuse-pod4', 'a reused IP resolves to its new owner');
    assert.equal(cache.lookup('10.60.0.101'), undefined, 'a moved pod no longer owns its old IP');
  });

  it('equals the API state after an API server restart', async () => {
    const reconnects0 = agent.stats().reduce((s, x) => s + x.errors + x.reconnects, 0);
    await restartApiserver();
    await parallel(Array.from({ length: 30 }, (_, i) => i), 8, (i) => create(re(ns, `after-restart-${i}`, [`10.62.0.${i}`])));
    await settle('after restart', 60_000);
    await assertCacheMatches(client, cache);
    assert.ok(agent.stats().reduce((s, x) => s + x.errors + x.reconnects, 0) > reconnects0, 'the watches reconnected');
  });

  it('relists after a forced 410 (etcd compaction) and equals the API state', async () => {
    const gone0 = agent.stats().find((s) => s.resource.startsWith('retinaendpoints'))?.gone ?? 0;
    await stopApiserver();
    // Changes the agent cannot see as watch events: removed straight from etcd, history compacted.
    for (let i = 0; i < 10; i++) await etcdDelete(`/registry/retina.sh/retinaendpoints/${ns}/after-restart-${i}`);
    await compactEtcd();
    await startApiserver();
    await eventually('a 410 and a relist', 60_000, () => (agent.stats().find((s) => s.resource.startsWith('retinaendpoints'))?.gone ?? 0) > gone0, 500);
    await settle('after 410', 60_000);
    await assertCacheMatches(client, cache);
    assert.equal(cache.pod(ns, 'after-restart-0'), undefined);
  });
});
