/**
 * API bytes per agent: what an agent receives when it watches Pods (what remote context costs without
 * the operator) versus RetinaEndpoints (the operator's slim copies), over the same kwok churn script:
 * Deployments scaled up and down, rolling updates, label changes and deletions. Both start before the
 * churn and count every byte of their LIST and WATCH bodies. Goal: at least 10x fewer with RetinaEndpoints.
 */
import { Reflector, createRestClient, loadRestConfig, collectionPath, objectPath, resources, type KubeObject } from '../../src/k8s/index.js';
import { createNamespace, deleteNamespace, deployment, deployments, eligible, eventually, listAll, realisticDeployment, scale, startCluster } from '../../test/integration/harness.js';
import { startOperator, uniqueId } from '../../test/integration/operator-helpers.js';
import type { PodWire, RetinaEndpoint } from '../../src/k8s/index.js';

await using cluster = await startCluster();
const { client } = cluster;
await using _operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('bench-bytes') });

async function churn(ns: string, template: (ns: string, name: string, replicas: number) => unknown) {
  async function watcher(res: typeof resources.pods) {
    const c = createRestClient(await loadRestConfig({ kubeconfig: cluster.kubeconfig, env: {} }));
    const r = new Reflector<KubeObject, string>({ client: c, resource: res, namespace: ns, transform: (o) => o.metadata.resourceVersion ?? '' });
    const h = r.start();
    return { c, r, h };
  }
  const pods = await watcher(resources.pods);
  const eps = await watcher(resources.retinaEndpoints);
  await eventually('watchers synced', 30_000, () => pods.r.synced && eps.r.synced);

  const t0 = Date.now();
  const D = 4;
  for (let d = 0; d < D; d++) await client.request('POST', collectionPath(deployments, ns), { body: template(ns, `churn${d}`, 50) });
  const settle = async (what: string): Promise<void> => {
    await eventually(what, 180_000, async () => {
      const [p, r] = await Promise.all([listAll<PodWire>(client, resources.pods, ns), listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns)]);
      const want = new Set(p.filter(eligible).map((x) => x.metadata.name));
      return p.every((x) => eligible(x) && !x.metadata.deletionTimestamp) && r.length === want.size && r.every((x) => want.has(x.metadata.name));
    }, 1000);
  };
  await settle('initial rollout');
  for (let d = 0; d < D; d++) await scale(client, ns, `churn${d}`, 80);
  await settle('scale up');
  // A rolling update of two Deployments: every pod replaced.
  for (let d = 0; d < 2; d++) {
    await client.request('PATCH', objectPath(deployments, ns, `churn${d}`), { contentType: 'application/merge-patch+json', body: { spec: { template: { metadata: { labels: { version: 'v2' } } } } } });
  }
  await settle('rolling update');
  const some = (await listAll<PodWire>(client, resources.pods, ns)).slice(0, 40);
  for (const p of some) await client.request('PATCH', objectPath(resources.pods, ns, p.metadata.name), { contentType: 'application/merge-patch+json', body: { metadata: { labels: { tier: 'x' } } } }).catch(() => undefined);
  for (const p of some.slice(0, 20)) await client.request('DELETE', objectPath(resources.pods, ns, p.metadata.name)).catch(() => undefined);
  for (let d = 0; d < D; d++) await scale(client, ns, `churn${d}`, 30);
  await settle('scale down');
  await new Promise((r) => setTimeout(r, 2000));

  const podBytes = pods.c.bytesReceived();
  const epBytes = eps.c.bytesReceived();
  for (const w of [pods, eps]) {
    await w.h[Symbol.asyncDispose]();
    w.c.close();
  }

  return { podBytes, epBytes, durationMs: Date.now() - t0, podEvents: pods.r.stats().events, epEvents: eps.r.stats().events };
}
const results = [];
for (const [fixture, template] of [['realistic pods (app + sidecar, probes, env, SA volume)', realisticDeployment], ['minimal pods (one container, no volumes)', deployment]] as const) {
  const ns = uniqueId('bench-bytes');
  await createNamespace(client, ns);
  const r = await churn(ns, template);
  await deleteNamespace(client, ns);
  results.push({ fixture, ...r });
}
for (const r of results) {
  console.log(JSON.stringify({
    name: 'k8s-api-bytes-per-agent', podWatcherBytes: r.podBytes, retinaEndpointWatcherBytes: r.epBytes, ratio: Number((r.podBytes / r.epBytes).toFixed(1)),
    goal: '>= 10x fewer', fixture: `${r.fixture}; 4 Deployments, 200 -> 320 pods, rolling update of 2, 40 relabels, 20 deletions, scale to 120`,
    conditions: { durationMs: r.durationMs, podEvents: r.podEvents, retinaEndpointEvents: r.epEvents, node: process.version },
  }));
}
