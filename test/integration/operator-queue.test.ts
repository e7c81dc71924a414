/**
 * How the operator's RetinaEndpoint queue behaves when the cluster is big, on a small real one (what
 * bench/k8s/scale.bench.ts measured at 100 000 pods): a standby queues nothing (under churn its queue
 * kept every pod name ever seen); a new leader queues the endpoints that are missing or left over ahead
 * of its pass over the rest; and it writes nothing before its stores are complete (a RetinaEndpoint list
 * slower than the Pod list made it create, meet 409 and patch every endpoint that already existed).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { collectionPath, keyAllowlist, objectPath, resources, type PodWire, type RestClient, type RetinaEndpoint } from '../../src/k8s/index.js';
import { DEFAULT_LABEL_ALLOWLIST, podToSpec } from '../../src/operator/index.js';
import { runOperator } from '../../src/cli/operator-run.js';
import { createNamespace, deleteNamespace, deployment, deployments, eligible, eventually, listAll, startCluster, type Cluster } from './harness.js';
import { CRD_DIR, converged, counterValue, newClient, operatorCfg, startOperator, testLog, uniqueId } from './operator-helpers.js';

describe('operator queue at scale', { timeout: 600_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  const namespaces: string[] = [];

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
  });

  after(async () => {
    for (const ns of namespaces) await deleteNamespace(client, ns);
    await cluster?.[Symbol.asyncDispose]();
  });

  async function podsRunning(n: number): Promise<string> {
    const ns = uniqueId('opq');
    namespaces.push(ns);
    await createNamespace(client, ns);
    await client.request('POST', collectionPath(deployments, ns), { body: deployment(ns, 'web', n) });
    await eventually(`${n} running pods`, 120_000, async () => (await listAll<PodWire>(client, resources.pods, ns)).filter(eligible).length === n, 500);
    return ns;
  }

  it('a standby queues nothing while another replica leads, under churn', async () => {
    const ns = await podsRunning(30);
    const lease = uniqueId('opq-standby');
    await using a = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: lease });
    await eventually('a leads', 30_000, () => a.op.isLeader());
    await using b = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: lease });
    await eventually('b synced', 30_000, () => b.op.synced());
    await eventually('converged', 60_000, () => converged(client, ns), 500);
    // Churn: scale up and down; the leader writes, the standby only watches.
    await client.request('PATCH', objectPath(deployments, ns, 'web'), { contentType: 'application/merge-patch+json', body: { spec: { replicas: 50 } } });
    await eventually('50 endpoints', 60_000, async () => (await listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns)).length === 50, 500);
    await client.request('PATCH', objectPath(deployments, ns, 'web'), { contentType: 'application/merge-patch+json', body: { spec: { replicas: 20 } } });
    await eventually('converged at 20', 60_000, async () => (await listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns)).length === 20 && converged(client, ns), 500);
    assert.ok(!b.op.isLeader());
    assert.ok((b.op.retinaEndpoints?.pods.size ?? 0) >= 20, 'the standby\'s stores are warm');
    assert.equal(b.op.retinaEndpoints?.queue.pending, 0, 'the standby queued no key');
  });

  it('a new leader queues missing and left-over endpoints ahead of the pass over the rest, then writes only those', async () => {
    const ns = await podsRunning(20);
    // A Lease some other replica holds for an hour: this operator syncs its stores and waits.
    const lease = uniqueId('opq-lead');
    const now = new Date().toISOString().replace('Z', '000Z');
    await client.request('POST', collectionPath(resources.leases, 'kube-system'), {
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: lease, namespace: 'kube-system' }, spec: { holderIdentity: 'someone-else', leaseDurationSeconds: 3600, acquireTime: now, renewTime: now } },
    });
    // 12 endpoints as the operator would write them, 8 missing, 3 whose pod does not exist.
    const pods = (await listAll<PodWire>(client, resources.pods, ns)).filter(eligible);
    for (const p of pods.slice(0, 12)) {
      await client.request('POST', collectionPath(resources.retinaEndpoints, ns), {
        body: {
          apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint',
          metadata: { name: p.metadata.name, namespace: ns, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: p.metadata.name, uid: p.metadata.uid }] },
          spec: podToSpec(p, keyAllowlist(DEFAULT_LABEL_ALLOWLIST), keyAllowlist(['retina.sh'])),
        },
      });
    }
    for (let i = 0; i < 3; i++) {
      await client.request('POST', collectionPath(resources.retinaEndpoints, ns), {
        body: { apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: `gone-${i}`, namespace: ns }, spec: { podIP: `10.99.0.${i + 1}`, podIPs: [`10.99.0.${i + 1}`] } },
      });
    }
    await using op = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: lease });
    const re = op.op.retinaEndpoints;
    assert.ok(re);
    await eventually('stores synced with this namespace', 30_000, () => op.op.synced() && re.endpoints.keys().filter((k) => k.startsWith(`${ns}/`)).length === 15);
    assert.ok(!op.op.isLeader());
    assert.equal(re.queue.pending, 0);
    re.enqueueAll();
    const lanes = new Map<string, number>();
    for (const k of new Set([...re.pods.keys(), ...re.endpoints.keys()].filter((x) => x.startsWith(`${ns}/`)))) {
      const lane = `${re.queue.lane(k)}`;
      lanes.set(lane, (lanes.get(lane) ?? 0) + 1);
    }
    assert.deepEqual(Object.fromEntries(lanes), { high: 8 + 3, low: 12 }, 'the 8 missing and the 3 left over high, the 12 in place low');
    // Takes over (the Lease deleted) and writes exactly those.
    const writes0 = await counterValue(op.op, 'retina_operator_api_writes_total');
    await client.request('DELETE', objectPath(resources.leases, 'kube-system', lease));
    await eventually('leads', 30_000, () => op.op.isLeader());
    await eventually('converged', 60_000, () => converged(client, ns), 500);
    await eventually('idle', 30_000, () => re.queue.pending === 0);
    assert.equal(await counterValue(op.op, 'retina_operator_api_writes_total', { verb: 'create' }), 8);
    assert.equal(await counterValue(op.op, 'retina_operator_api_writes_total', { verb: 'delete' }), 3);
    assert.equal(await counterValue(op.op, 'retina_operator_api_writes_total') - writes0, 11, 'no patch of the 12 in place');
  });

  it('writes nothing before its stores are complete: a slow RetinaEndpoint list causes no create, 409 or patch', async () => {
    const ns = await podsRunning(40);
    {
      await using first = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('opq-first') });
      await eventually('converged', 60_000, () => converged(client, ns), 500);
      await eventually('idle', 30_000, () => first.op.retinaEndpoints?.queue.pending === 0);
    }
    // The same API server, its RetinaEndpoint LISTs answered 3 s late (a big collection, a busy server).
    const real = await newClient(cluster.kubeconfig);
    const slow: RestClient = {
      ...real,
      async request<T>(method: string, path: string, o?: Parameters<RestClient['request']>[2]): Promise<T> {
        if (method === 'GET' && path.endsWith('/retinaendpoints') && !o?.query?.['watch']) await new Promise((r) => setTimeout(r, 3000));
        return real.request<T>(method, path, o);
      },
    };
    const op = await runOperator({ config: operatorCfg({ RETINA_LEADERELECTIONID: uniqueId('opq-slow') }), client: slow, log: testLog('operator'), crdDir: CRD_DIR });
    try {
      await eventually('leads with synced stores', 30_000, () => op.isLeader() && op.synced());
      const re = op.retinaEndpoints;
      assert.ok(re);
      await eventually('its pass done', 60_000, async () => re.queue.pending === 0 && (await counterValue(op, 'controller_runtime_reconcile_total', { controller: 'retinaendpoint' })) >= 40, 250);
      assert.equal(await counterValue(op, 'retina_operator_api_writes_total'), 0, 'every RetinaEndpoint was already right');
      assert.ok(await converged(client, ns));
    } finally {
      await op[Symbol.asyncDispose]();
      real.close();
    }
  });
});
