/**
 * Propagation: pod Running -> entry in an agent's IP cache, through the operator (RetinaEndpoint) and
 * the agent's watch, with pods created at 50/s. Both times are taken in this process (one clock): when
 * a Pod watcher here sees the pod Running with an IP, and when the agent's cache gets its entry.
 * Goal: p99 under 1 s.
 */
import { IpCache, type PodEndpoint } from '../../src/cache/index.js';
import { Reflector, collectionPath, startAgentWatch, resources, type PodWire, type RetinaEndpoint } from '../../src/k8s/index.js';
import { createNamespace, deleteNamespace, eventually, startCluster } from '../../test/integration/harness.js';
import { startOperator, testLog, uniqueId } from '../../test/integration/operator-helpers.js';

const RATE = 50;
const SECONDS = 10;
const N = RATE * SECONDS;

await using cluster = await startCluster();
const { client } = cluster;
const ns = uniqueId('bench-prop');
await createNamespace(client, ns);
await using operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('bench-prop') });
await eventually('operator leading with synced informers', 30_000, () => operator.op.isLeader() && operator.op.synced());

const inCache = new Map<string, number>();
class TimedCache extends IpCache {
  override upsertPod(e: PodEndpoint): void {
    if (e.namespace === ns && !inCache.has(e.name)) inCache.set(e.name, performance.now());
    super.upsertPod(e);
  }
}
const cache = new TimedCache();
await using agent = startAgentWatch({ client, cache, remoteContext: true, log: testLog('agent') });
await agent.waitForSync();

const running = new Map<string, number>();
const podWatch = new Reflector<PodWire, boolean>({ client, resource: resources.pods, namespace: ns, transform: (p) => p.status?.phase === 'Running' && Boolean(p.status.podIP) });
const mark = (k: string, ok: boolean): void => {
  const name = k.slice(k.indexOf('/') + 1);
  if (ok && !running.has(name)) running.set(name, performance.now());
};
podWatch.subscribe({ added: mark, updated: mark });
await using _pw = podWatch.start();
// The RetinaEndpoints as this process sees them: splits the path into operator and agent parts.
const reSeen = new Map<string, number>();
const reWatch = new Reflector<RetinaEndpoint, true>({ client, resource: resources.retinaEndpoints, namespace: ns, transform: () => true });
reWatch.subscribe({ added: (k) => void (reSeen.has(k.slice(k.indexOf('/') + 1)) || reSeen.set(k.slice(k.indexOf('/') + 1), performance.now())) });
await using _rw = reWatch.start();

/** Creates `count` pods named `${prefix}${i}` at RATE a second. */
async function createPods(prefix: string, count: number): Promise<number> {
  const t0 = performance.now();
  const creates: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    creates.push(client.request('POST', collectionPath(resources.pods, ns), {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: `${prefix}${i}`, labels: { app: 'prop' } }, spec: { containers: [{ name: 'c', image: 'registry.invalid/x' }], terminationGracePeriodSeconds: 0 } },
    }));
  }
  await Promise.all(creates);
  return (performance.now() - t0) / 1000;
}
// Warm-up (not measured): the first custom-resource writes after an API server start are slow (~2 s
// inside kube-apiserver); 100 pods through the whole path first, then the measured run.
await createPods('warm', 100);
await eventually('warm-up pods in the agent cache', 120_000, () => [...inCache.keys()].filter((n) => n.startsWith('warm')).length >= 100, 200);
for (const m of [running, inCache, reSeen]) for (const k of [...m.keys()]) if (k.startsWith('warm')) m.delete(k);
const createSeconds = await createPods('p', N);
await eventually('every pod in the agent cache', 120_000, () => inCache.size >= N && running.size >= N, 200);
const quantiles = (xs: number[]): (p: number) => number => {
  const v = [...xs].sort((a, b) => a - b);
  return (p) => Number((v[Math.min(v.length - 1, Math.floor(p * v.length))] as number).toFixed(1));
};
const q = quantiles([...running].map(([name, at]) => (inCache.get(name) as number) - at));
const qOp = quantiles([...running].filter(([n]) => reSeen.has(n)).map(([name, at]) => (reSeen.get(name) as number) - at));
const qAgent = quantiles([...inCache].filter(([n]) => reSeen.has(n)).map(([name, at]) => at - (reSeen.get(name) as number)));
await deleteNamespace(client, ns);
console.log(JSON.stringify({
  name: 'k8s-propagation-running-to-agent-cache', pods: N, ratePerSecond: Number((N / createSeconds).toFixed(1)),
  p50Ms: q(0.5), p90Ms: q(0.9), p99Ms: q(0.99), maxMs: q(1), minMs: q(0), goal: 'p99 < 1000 ms',
  runningToRetinaEndpoint: { p50Ms: qOp(0.5), p99Ms: qOp(0.99) }, retinaEndpointToAgentCache: { p50Ms: qAgent(0.5), p99Ms: qAgent(0.99) },
  conditions: { path: 'Pod Running -> operator -> RetinaEndpoint -> agent watch -> IpCache', node: process.version },
}));
