/**
 * The operator against a real API server: 500 pods from Deployments on 10 kwok nodes become 500
 * RetinaEndpoints with the right fields; the agent's cache resolves their workload to the Deployment;
 * a label change patches; an unchanged pod causes no write; a deleted pod loses its endpoint.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IpCache, type PodEndpoint } from '../../src/cache/index.js';
import { collectionPath, objectPath, resources, startAgentWatch, type AgentWatch, type PodWire, type RestClient, type RetinaEndpoint } from '../../src/k8s/index.js';
import { createNamespace, deleteNamespace, deployment, deployments, eligible, eventually, listAll, startCluster, type Cluster } from './harness.js';
import { counterValue, startOperator, testLog, uniqueId } from './operator-helpers.js';

const DEPLOYMENTS = 5;
const REPLICAS = 100;
const TOTAL = DEPLOYMENTS * REPLICAS;

describe('operator: Pods -> RetinaEndpoints', { timeout: 600_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let operator: Awaited<ReturnType<typeof startOperator>>;
  let agent: AgentWatch;
  const cache = new IpCache();
  const ns = uniqueId('op');

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    await createNamespace(client, ns);
    operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('retina-op') });
    agent = startAgentWatch({ client, cache, remoteContext: true, log: testLog('agent') });
  });

  after(async () => {
    await agent?.[Symbol.asyncDispose]();
    await operator?.[Symbol.asyncDispose]();
    if (client) await deleteNamespace(client, ns);
    await cluster?.[Symbol.asyncDispose]();
  });

  const pods = async (): Promise<PodWire[]> => (await listAll<PodWire>(client, resources.pods, ns)).filter(eligible);
  const endpoints = (): Promise<RetinaEndpoint[]> => listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns);

  it(`turns ${TOTAL} pods of ${DEPLOYMENTS} Deployments on 10 kwok nodes into ${TOTAL} RetinaEndpoints`, async () => {
    for (let d = 0; d < DEPLOYMENTS; d++) {
      await client.request('POST', collectionPath(deployments, ns), { body: deployment(ns, `web${d}`, REPLICAS, { tier: 'front', 'not-allowlisted': 'x' }) });
    }
    const running = await eventually(`${TOTAL} running pods`, 360_000, async () => {
      const p = await pods();
      return p.length === TOTAL && p;
    }, 1000);
    assert.equal(new Set(running.map((p) => p.spec?.nodeName)).size, 10, 'pods spread over the 10 kwok nodes');
    const res = await eventually(`${TOTAL} RetinaEndpoints`, 120_000, async () => {
      const r = await endpoints();
      return r.length === TOTAL && r;
    }, 1000);
    const byName = new Map(res.map((r) => [r.metadata.name, r]));
    for (const p of running) {
      const re = byName.get(p.metadata.name);
      assert.ok(re, `RetinaEndpoint for ${p.metadata.name}`);
      assert.equal(re.spec.podIP, p.status?.podIP);
      assert.deepEqual(re.spec.podIPs, (p.status?.podIPs ?? []).map((x) => x.ip));
      assert.equal(re.spec.nodeIP, p.status?.hostIP);
      const rs = p.metadata.ownerReferences?.[0];
      assert.deepEqual(re.spec.ownerReferences, [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs?.name }]);
      assert.equal(re.spec.labels?.['app'], p.metadata.labels?.['app']);
      assert.equal(re.spec.labels?.['tier'], 'front');
      assert.equal(re.spec.labels?.['not-allowlisted'], undefined, 'labels outside the allowlist are not copied');
      assert.equal(re.spec.labels?.['pod-template-hash'], undefined);
      const owner = re.metadata.ownerReferences?.[0];
      assert.equal(owner?.kind, 'Pod');
      assert.equal(owner?.uid, p.metadata.uid, 'owned by the Pod, so GC removes it');
    }
    // The agent's cache resolves the owner ReplicaSet to the Deployment.
    await eventually('agent cache holds every endpoint', 60_000, () => [...cache.pods()].filter((e) => e.namespace === ns).length === TOTAL);
    for (const p of running.slice(0, 50)) {
      const e = cache.lookup(p.status?.podIP as string) as PodEndpoint;
      assert.equal(e?.kind, 'pod');
      assert.equal(e.name, p.metadata.name);
      assert.deepEqual(e.workloads, [{ kind: 'Deployment', name: p.metadata.labels?.['app'] }]);
      assert.equal(e.labels['tier'], 'front', 'pod labels are kept (Retina lost them)');
    }
  });

  it('local context: an agent watches only its node\'s pods (field selector) into its cache', async () => {
    const local = new IpCache();
    const node = 'kwok-node-3';
    const w = startAgentWatch({ client, cache: local, remoteContext: false, nodeName: node, log: testLog('agent-local') });
    try {
      await w.waitForSync();
      const want = (await listAll<PodWire>(client, resources.pods, undefined, { fieldSelector: `spec.nodeName=${node}` })).filter(eligible);
      assert.ok(want.length > 20, `pods on ${node}: ${want.length}`);
      await eventually('local cache equals this node\'s pods', 20_000, () => local.stats().pods === want.length);
      for (const p of want) {
        const e = local.lookup(p.status?.podIP as string) as PodEndpoint;
        assert.equal(e?.name, p.metadata.name);
        if (p.metadata.namespace === ns) assert.deepEqual(e.workloads, [{ kind: 'Deployment', name: p.metadata.labels?.['app'] }]);
      }
      assert.equal(local.stats().services + local.stats().nodes, 0, 'local context watches pods only');
      assert.deepEqual(w.stats().map((x) => x.resource), ['pods']);
    } finally {
      await w[Symbol.asyncDispose]();
    }
  });

  it('patches the RetinaEndpoint when an allowlisted label changes', async () => {
    const [p] = await pods();
    assert.ok(p);
    await client.request('PATCH', objectPath(resources.pods, ns, p.metadata.name), { contentType: 'application/merge-patch+json', body: { metadata: { labels: { tier: 'back' } } } });
    await eventually('label on the RetinaEndpoint', 20_000, async () => {
      const re = await client.request<RetinaEndpoint>('GET', objectPath(resources.retinaEndpoints, ns, p.metadata.name));
      return re.spec.labels?.['tier'] === 'back';
    });
    await eventually('label in the agent cache', 10_000, () => cache.pod(ns, p.metadata.name)?.labels['tier'] === 'back');
  });

  it('writes nothing when a pod changes outside the slim content', async () => {
    const [p] = await pods();
    assert.ok(p);
    const path = objectPath(resources.retinaEndpoints, ns, p.metadata.name);
    const before = await client.request<RetinaEndpoint>('GET', path);
    await eventually('operator idle', 60_000, async () => (operator.op.retinaEndpoints?.queue.pending ?? 1) === 0);
    const writes0 = await counterValue(operator.op, 'retina_operator_api_writes_total');
    const reconciles0 = await counterValue(operator.op, 'controller_runtime_reconcile_total');
    await client.request('PATCH', objectPath(resources.pods, ns, p.metadata.name), {
      contentType: 'application/merge-patch+json',
      body: { metadata: { labels: { 'not-allowlisted': 'changed' }, annotations: { 'example.com/note': 'hello' } } },
    });
    await new Promise((r) => setTimeout(r, 3000));
    const afterRe = await client.request<RetinaEndpoint>('GET', path);
    assert.equal(afterRe.metadata.resourceVersion, before.metadata.resourceVersion, 'RetinaEndpoint not rewritten');
    assert.equal(await counterValue(operator.op, 'retina_operator_api_writes_total'), writes0, 'no API write');
    assert.ok((await counterValue(operator.op, 'controller_runtime_reconcile_total')) - reconciles0 <= 1, 'the slim pod did not change, so at most one reconcile ran');
  });

  it('removes the RetinaEndpoint when its pod is deleted', async () => {
    const [p] = await pods();
    assert.ok(p);
    await client.request('DELETE', objectPath(resources.pods, ns, p.metadata.name), { body: { gracePeriodSeconds: 0 } });
    await eventually('RetinaEndpoint deleted', 30_000, async () => !(await endpoints()).some((r) => r.metadata.name === p.metadata.name));
    await eventually('cache entry deleted', 10_000, () => cache.pod(ns, p.metadata.name) === undefined);
    // The ReplicaSet replaces the pod; the replacement gets its endpoint and everything converges.
    await eventually('converged', 60_000, async () => {
      const [ps, rs] = await Promise.all([pods(), endpoints()]);
      const want = new Set(ps.map((x) => x.metadata.name));
      return rs.length === want.size && rs.every((r) => want.has(r.metadata.name)) && ps.length === TOTAL;
    }, 1000);
    assert.ok(operator.op.isLeader());
  });

  it('/healthz on both servers answers 503 with the reason while the health source reports one (a fatal error or a signal being handled), 200 otherwise', async () => {
    const health: { problem?: string } = {};
    await using op2 = await startOperator(cluster.kubeconfig, { RETINA_REMOTECONTEXT: 'false', RETINA_LEADERELECTIONID: uniqueId('retina-health') }, undefined, () => health.problem);
    const ports = [op2.op.probeServer.address.port, op2.op.metricsServer.address.port];
    for (const port of ports) assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    health.problem = 'shutting down (SIGTERM)';
    for (const port of ports) {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(r.status, 503);
      assert.match(await r.text(), /shutting down \(SIGTERM\)/);
    }
  });
});
