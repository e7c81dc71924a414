/**
 * RetinaEndpointSlices against a real API server (issue 40's design change): the operator with
 * `retinaEndpointSlices` packs 240 pods of two Deployments on kwok into slices of at most 50, each
 * endpoint pod in exactly one, with the RetinaEndpoint's content; an agent watching slices holds the
 * same cache entries as one watching RetinaEndpoints, through a label change and a scale-down (empty
 * slices deleted); a new leader repairs what it finds (a pod in two slices, a deleted pod's entry, a
 * slice deleted by hand) without the agent losing the pod in between.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IpCache, type PodEndpoint } from '../../src/cache/index.js';
import { collectionPath, objectPath, resources, startAgentWatch, type AgentWatch, type PodWire, type RestClient, type RetinaEndpointSlice } from '../../src/k8s/index.js';
import { createNamespace, deleteNamespace, deployment, deployments, eligible, eventually, listAll, scale, startCluster, type Cluster } from './harness.js';
import { counterValue, startOperator, testLog, uniqueId } from './operator-helpers.js';

const MAX = 50;
const REPLICAS = 120;

describe('operator and agent: RetinaEndpointSlices', { timeout: 600_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
  let bySlices: AgentWatch;
  let byEndpoints: AgentWatch;
  const cacheS = new IpCache();
  const cacheE = new IpCache();
  const ns = uniqueId('res');
  const lease = uniqueId('retina-res');
  const env = { RETINA_LEADERELECTIONID: lease, RETINA_RETINAENDPOINTSLICES: 'true', RETINA_RETINAENDPOINTSLICEMAXSIZE: String(MAX) };

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    await createNamespace(client, ns);
    operator = await startOperator(cluster.kubeconfig, env);
    bySlices = startAgentWatch({ client, cache: cacheS, remoteContext: true, endpointSlices: true, log: testLog('agent-slices') });
    byEndpoints = startAgentWatch({ client, cache: cacheE, remoteContext: true, log: testLog('agent-endpoints') });
  });

  after(async () => {
    await bySlices?.[Symbol.asyncDispose]();
    await byEndpoints?.[Symbol.asyncDispose]();
    await operator?.[Symbol.asyncDispose]();
    if (client) await deleteNamespace(client, ns);
    await cluster?.[Symbol.asyncDispose]();
  });

  const pods = async (): Promise<PodWire[]> => (await listAll<PodWire>(client, resources.pods, ns)).filter(eligible);
  const slices = (): Promise<RetinaEndpointSlice[]> => listAll<RetinaEndpointSlice>(client, resources.retinaEndpointSlices, ns);
  /** Every eligible pod in exactly one slice, no other names, no slice over MAX or empty: the problem, or ''. */
  const coverage = async (): Promise<string> => {
    const [ps, ss] = await Promise.all([pods(), slices()]);
    const want = new Set(ps.map((p) => p.metadata.name));
    const seen = new Map<string, string>();
    for (const s of ss) {
      if (!s.endpoints.length) return `${s.metadata.name} is empty`;
      if (s.endpoints.length > MAX) return `${s.metadata.name} holds ${s.endpoints.length}`;
      for (const e of s.endpoints) {
        if (seen.has(e.name)) return `${e.name} in ${seen.get(e.name)} and ${s.metadata.name}`;
        if (!want.has(e.name)) return `${e.name} (${s.metadata.name}) is no endpoint pod`;
        seen.set(e.name, s.metadata.name);
      }
    }
    const missing = [...want].filter((n) => !seen.has(n));
    return missing.length ? `${missing.length} pods in no slice (${missing.slice(0, 3).join(', ')})` : '';
  };
  const entries = (c: IpCache): Map<string, string> =>
    new Map([...c.pods()].filter((e) => e.namespace === ns).map((e) => [e.name, JSON.stringify(e)]));
  /** The two agents' caches hold the same entries for the namespace, `n` of them. */
  const sameCaches = (n: number): boolean => {
    const a = entries(cacheS);
    const b = entries(cacheE);
    return a.size === n && b.size === n && [...a].every(([k, v]) => b.get(k) === v);
  };

  it(`packs ${2 * REPLICAS} pods into slices of at most ${MAX}, and an agent reading them caches what one reading RetinaEndpoints does`, async () => {
    for (const d of ['web', 'api']) await client.request('POST', collectionPath(deployments, ns), { body: deployment(ns, d, REPLICAS, { tier: 'front' }) });
    const running = await eventually(`${2 * REPLICAS} running pods`, 300_000, async () => {
      const p = await pods();
      return p.length === 2 * REPLICAS && p;
    }, 1000);
    await eventually('every pod in one slice', 120_000, async () => (await coverage()) === '', 1000);
    // Each entry against its pod as the API server holds both now: a pod's status can still change after
    // the count above (kwok once gave one of 240 a new IP in between), and the slice follows it.
    const differences = async (): Promise<string> => {
      const [ss, ps] = await Promise.all([slices(), pods()]);
      if (ss.length < (2 * REPLICAS) / MAX || ss.length > (2 * REPLICAS) / MAX + 2) return `${ss.length} slices for ${2 * REPLICAS} pods`;
      const entry = new Map(ss.flatMap((s) => s.endpoints.map((e) => [e.name, e])));
      for (const p of ps) {
        const e = entry.get(p.metadata.name);
        const got = JSON.stringify([e?.podIPs, e?.nodeIP, e?.ownerReferences, e?.labels?.['tier'], e?.labels?.['pod-template-hash']]);
        const want = JSON.stringify([(p.status?.podIPs ?? []).map((x) => x.ip), p.status?.hostIP, [{ kind: 'ReplicaSet', name: p.metadata.ownerReferences?.[0]?.name }], 'front', undefined]);
        if (got !== want) return `${p.metadata.name}: entry ${got}, pod ${want} (IPs, node IP, owner, tier label, no pod-template-hash: the operator's label allowlist)`;
      }
      return '';
    };
    let last = '';
    await eventually('every slice entry as its pod', 30_000, async () => (last = await differences()) === '', 500)
      .catch((e: unknown) => assert.fail(`${String(e)}: ${last}`));
    await bySlices.waitForSync();
    await eventually('both caches equal', 60_000, () => sameCaches(2 * REPLICAS));
    const p0 = (await pods()).find((p) => p.metadata.name === running[0]?.metadata.name) as PodWire;
    const c = cacheS.lookup(p0.status?.podIP as string) as PodEndpoint;
    assert.equal(c.name, p0.metadata.name);
    assert.deepEqual(c.workloads, [{ kind: 'Deployment', name: p0.metadata.labels?.['app'] }]);
    assert.deepEqual(bySlices.stats().map((s) => s.resource).sort(), ['nodes', 'retinaendpointslices.retina.sh', 'services']);
  });

  it('a label change rewrites one slice; a scale-down shrinks slices and deletes empty ones', async () => {
    const [p] = await pods();
    assert.ok(p);
    const writes0 = await counterValue((operator as NonNullable<typeof operator>).op, 'retina_operator_api_writes_total', { resource: 'retinaendpointslices' });
    await client.request('PATCH', objectPath(resources.pods, ns, p.metadata.name), { contentType: 'application/merge-patch+json', body: { metadata: { labels: { tier: 'back' } } } });
    await eventually('label in the slices agent\'s cache', 20_000, () => cacheS.pod(ns, p.metadata.name)?.labels['tier'] === 'back');
    await eventually('both caches equal', 20_000, () => sameCaches(2 * REPLICAS));
    const writes1 = await counterValue((operator as NonNullable<typeof operator>).op, 'retina_operator_api_writes_total', { resource: 'retinaendpointslices' });
    assert.equal(writes1 - writes0, 1, 'one slice written for one pod\'s change');

    await scale(client, ns, 'api', 10);
    await eventually(`${REPLICAS + 10} pods`, 120_000, async () => (await pods()).length === REPLICAS + 10, 1000);
    await eventually('slices follow the scale-down', 60_000, async () => (await coverage()) === '', 1000);
    await eventually('both caches equal after the scale-down', 30_000, () => sameCaches(REPLICAS + 10));
  });

  it('a new leader repairs a pod in two slices, a gone pod\'s entry and a deleted slice; the agent keeps the pod meanwhile', async () => {
    await (operator as NonNullable<typeof operator>)[Symbol.asyncDispose]();
    operator = undefined;
    const ss = (await slices()).filter((s) => s.endpoints.length >= 2);
    const [a, b] = ss;
    assert.ok(a && b, 'two slices');
    const dup = a.endpoints[0];
    assert.ok(dup);
    // b also lists a's first pod (as two leaders' writes could leave it), then a loses it: the pod stays cached.
    await client.request('PATCH', objectPath(resources.retinaEndpointSlices, ns, b.metadata.name), { contentType: 'application/merge-patch+json', body: { endpoints: [...b.endpoints, dup] } });
    await client.request('PATCH', objectPath(resources.retinaEndpointSlices, ns, a.metadata.name), { contentType: 'application/merge-patch+json', body: { endpoints: a.endpoints.slice(1) } });
    await new Promise((r) => setTimeout(r, 1000));
    assert.ok(cacheS.pod(ns, dup.name), 'the pod moved between slices and stays in the cache');
    // A slice deleted by hand, and a pod deleted while no operator runs.
    const c = ss[2] ?? a;
    await client.request('DELETE', objectPath(resources.retinaEndpointSlices, ns, c.metadata.name));
    const gone = (await pods()).find((p) => p.metadata.name !== dup.name && !c.endpoints.some((e) => e.name === p.metadata.name)) as PodWire;
    await client.request('DELETE', objectPath(resources.pods, ns, gone.metadata.name), { body: { gracePeriodSeconds: 0 } });
    await eventually('the pod is gone', 30_000, async () => !(await pods()).some((p) => p.metadata.name === gone.metadata.name), 500);
    assert.notEqual(await coverage(), '', 'the slices are out of date while no operator runs');

    operator = await startOperator(cluster.kubeconfig, env);
    await eventually('the new leader repaired the slices', 60_000, async () => (await coverage()) === '', 1000);
    const n = (await pods()).length;
    await eventually('both caches equal after the repair', 30_000, () => sameCaches(n));
    assert.equal(cacheS.pod(ns, gone.metadata.name), undefined);
  });
});
