/**
 * RetinaEndpoints against RetinaEndpointSlices (issue 40's design change), side by side on one test
 * control plane holding the same BENCH_SLICES_ENDPOINTS (150 000) endpoints both ways: one
 * RetinaEndpoint each in `bench-agents-scale` (agents-scale.bench's namespace: what it left is reused)
 * and slices of BENCH_SLICES_SIZE (100) in `bench-agents-slices-<size>`, both written straight into etcd with
 * the managedFields entry the operator's writes leave. One JSON line per measurement:
 * - `sync`: one agent watch layer (src/k8s startAgentWatch, remote context, WatchList) in this process,
 *   per source, in the order A B B A: time to its initial state, its CPU, bytes and events received,
 *   its heap once synced, and the API server's CPU and watch events for it;
 * - `change`: BENCH_SLICES_CHANGES changes at BENCH_SLICES_RATE a second per source, each one pod's
 *   label (a RetinaEndpoint merge patch, or its slice's entries rewritten as the operator does): bytes
 *   and events per change as the watcher receives them, and the API server's CPU per change;
 * - `herd`: BENCH_SLICES_PROCESSES x BENCH_SLICES_PER_PROCESS light agents (watchers/watcher.ts)
 *   started together per source, as a DaemonSet rollout or an API server failover makes them: time
 *   until every one is synced, the API server's CPU and watch bytes, the watchers' CPU.
 * - `agent`: the real agent (bin/retina-agent --kubeconfig, default plugins, remote context) per source:
 *   time to its IP cache synced, RSS and peak RSS, CPU idle over BENCH_SLICES_STEADY_SECONDS (issue
 *   40's goal: RSS <= 150 MB and CPU <= 1 % of a core at 150 000 endpoints, steady state).
 * BENCH_SLICES_PHASES picks phases (sync,change,herd,agent).
 */
import { loadavg } from 'node:os';
import { IpCache } from '../../src/cache/index.js';
import { collectionPath, createRestClient, loadRestConfig, objectPath, resources, startAgentWatch, type KubeList, type ResourceRef } from '../../src/k8s/index.js';
import { createNamespace, eventually, startCluster } from '../../test/integration/harness.js';
import { envInt } from '../server/summary.js';
import { sliceBody, sliceName } from './endpoints.js';
import { apiDelta, apiLoad } from './watchers/apiserver.js';
import { churn, quantileOf } from './watchers/churn.js';
import { deleteSlicesInEtcd, putEndpointsInEtcd, putSlicesInEtcd } from './watchers/etcd-fill.js';
import { startFleet } from './watchers/fleet.js';
import { startAgent } from './watchers/agent-process.js';

const N = envInt('BENCH_SLICES_ENDPOINTS', 150_000);
const SIZE = envInt('BENCH_SLICES_SIZE', 100);
const CHANGES = envInt('BENCH_SLICES_CHANGES', 1000);
const RATE = envInt('BENCH_SLICES_RATE', 50);
const PROCESSES = envInt('BENCH_SLICES_PROCESSES', 4);
const PER_PROCESS = envInt('BENCH_SLICES_PER_PROCESS', 2);
const PHASES = new Set((process.env['BENCH_SLICES_PHASES'] ?? 'sync,change,herd,agent').split(','));
const STEADY_S = envInt('BENCH_SLICES_STEADY_SECONDS', 30);
const NS_RE = 'bench-agents-scale';
const NS_RES = `bench-agents-slices-${SIZE}`;
const maybeGc = (globalThis as { gc?: () => void }).gc;
if (!maybeGc) throw new Error('run with node --expose-gc (make bench does)');
const gc: () => void = maybeGc;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const r1 = (x: number): number => Number(x.toFixed(1));
const emit = (name: string, o: Record<string, unknown>): void => console.log(JSON.stringify({ name: `k8s-slices-${name}`, endpoints: N, sliceSize: SIZE, ...o, loadavg: loadavg().map(r1) }));

type Source = 'endpoints' | 'slices';
const RES: Record<Source, { ns: string; resource: ResourceRef; plural: string }> = {
  endpoints: { ns: NS_RE, resource: resources.retinaEndpoints, plural: 'retinaendpoints' },
  slices: { ns: NS_RES, resource: resources.retinaEndpointSlices, plural: 'retinaendpointslices' },
};

await using cluster = await startCluster();
const { client } = cluster;
const config = await loadRestConfig({ kubeconfig: cluster.kubeconfig, env: {} });

async function count(s: Source): Promise<number> {
  const l = await client.request<KubeList<unknown>>('GET', collectionPath(RES[s].resource, RES[s].ns), { query: { limit: 1 }, timeoutMs: 300_000 });
  return l.items.length + (l.metadata.remainingItemCount ?? 0);
}

// Both sources, filled through etcd (what an earlier run left is kept).
const slices = Math.ceil(N / SIZE);
for (const s of ['endpoints', 'slices'] as const) await createNamespace(client, RES[s].ns).catch(() => undefined);
const t0 = performance.now();
const have = { endpoints: await count('endpoints'), slices: await count('slices') };
if (have.endpoints < N) await putEndpointsInEtcd(NS_RE, N, Math.max(0, have.endpoints - 500));
if (have.slices !== slices) {
  // Only one size at a time: a watcher of slices reads every namespace.
  await deleteSlicesInEtcd();
  await putSlicesInEtcd(NS_RES, N, SIZE);
}
const allSlices = async (): Promise<number> => {
  const l = await client.request<KubeList<unknown>>('GET', collectionPath(resources.retinaEndpointSlices), { query: { limit: 1 }, timeoutMs: 300_000 });
  return l.items.length + (l.metadata.remainingItemCount ?? 0);
};
await eventually('the API server lists both sources, and no other slices', 900_000, async () => (await count('endpoints')) >= N && (await count('slices')) === slices && (await allSlices()) === slices, 2000);
emit('setup', { seconds: r1((performance.now() - t0) / 1000), had: have, objects: { endpoints: N, slices } });

const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** One sync of a fresh watch layer; its figures and the heap while it held the synced state (it is gone once this returns). */
async function syncOnce(s: Source): Promise<{ figures: Record<string, unknown>; heapSynced: number }> {
  const c = createRestClient(config, { userAgent: `retina-bench-slices-${s}` });
  const cache = new IpCache();
  const a0 = await apiLoad(config);
  const t = performance.now();
  const cpu0 = cpuUs();
  const watch = startAgentWatch({ client: c, cache, remoteContext: true, endpointSlices: s === 'slices' });
  await watch.waitForSync();
  const ms = Math.round(performance.now() - t);
  const cpuS = r1((cpuUs() - cpu0) / 1e6);
  const a1 = await apiLoad(config);
  gc();
  await sleep(200);
  gc();
  const heapSynced = process.memoryUsage().heapUsed;
  const st = watch.stats().find((x) => x.resource.startsWith(RES[s].plural));
  const figures = { source: s, ms, cpuS, MB: r1(c.bytesReceived() / 2 ** 20), events: st?.events, pods: cache.stats().pods, apiserver: apiDelta(a0, a1, RES[s].plural) };
  await watch[Symbol.asyncDispose]();
  c.close();
  return { figures, heapSynced };
}

if (PHASES.has('sync')) {
  for (const s of ['endpoints', 'slices', 'slices', 'endpoints'] as const) {
    gc();
    await sleep(500);
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const { figures, heapSynced } = await syncOnce(s);
    // The watch layer's heap: what it held synced, less what is left once it is gone (the start's
    // baseline can still hold what an earlier iteration had not let go of).
    await sleep(500);
    gc();
    await sleep(200);
    gc();
    emit('sync', { ...figures, heapMB: r1((heapSynced - process.memoryUsage().heapUsed) / 2 ** 20), heapSinceStartMB: r1((heapSynced - heap0) / 2 ** 20) });
  }
}

/** One pod's label changed in its slice: the slice's whole entry list written, as the operator's merge patch does. */
async function sliceChurn(marker: string): Promise<{ seconds: number; latenciesMs: number[]; failed: number }> {
  const start = performance.now();
  const latenciesMs: number[] = [];
  let failed = 0;
  const inflight = new Set<Promise<void>>();
  for (let k = 0; k < CHANGES; k++) {
    const wait = start + (k * 1000) / RATE - performance.now();
    if (wait > 0) await sleep(wait);
    while (inflight.size >= 32) await Promise.race(inflight);
    const i = (k * 7919) % N;
    const slice = Math.floor(i / SIZE);
    const body = sliceBody(NS_RES, slice, SIZE, N);
    const e = body.endpoints[i % SIZE];
    if (e) e.labels = { ...e.labels, version: `c${marker}-${k}` };
    const at = performance.now();
    const p: Promise<void> = client.request('PATCH', objectPath(resources.retinaEndpointSlices, NS_RES, sliceName(slice)), { contentType: 'application/merge-patch+json', body: { endpoints: body.endpoints } })
      .then(() => void latenciesMs.push(performance.now() - at), () => void failed++)
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  return { seconds: (performance.now() - start) / 1000, latenciesMs, failed };
}

if (PHASES.has('change')) {
  for (const s of ['endpoints', 'slices'] as const) {
    const c = createRestClient(config, { userAgent: `retina-bench-slices-change-${s}` });
    const cache = new IpCache();
    const watch = startAgentWatch({ client: c, cache, remoteContext: true, endpointSlices: s === 'slices' });
    await watch.waitForSync();
    const stat = (): number => watch.stats().find((x) => x.resource.startsWith(RES[s].plural))?.events ?? 0;
    const b0 = c.bytesReceived();
    const e0 = stat();
    const a0 = await apiLoad(config);
    const cpu0 = cpuUs();
    const marker = `${Date.now()}`;
    const ch = s === 'endpoints' ? await churn(client, NS_RE, { count: CHANGES, perSecond: RATE, total: N, first: 7, marker }) : await sliceChurn(marker);
    const done = CHANGES - ch.failed;
    await eventually('every change received', 300_000, () => stat() >= e0 + done, 100);
    const a1 = await apiLoad(config);
    const api = apiDelta(a0, a1, RES[s].plural) as { apiserverCpuS: number };
    emit('change', {
      source: s, changes: done, ratePerS: r1(CHANGES / ch.seconds), bytesPerChange: Math.round((c.bytesReceived() - b0) / done), eventsPerChange: r1((stat() - e0) / done),
      watcherCpuMsPerChange: r1((cpuUs() - cpu0) / 1000 / done), patchP99Ms: quantileOf(ch.latenciesMs, 0.99),
      apiserverCpuMsPerChange: r1((api.apiserverCpuS * 1000) / done), apiserver: api,
    });
    await watch[Symbol.asyncDispose]();
    c.close();
  }
}

if (PHASES.has('herd')) {
  for (const s of ['endpoints', 'slices'] as const) {
    const a0 = await apiLoad(config);
    const fleet = startFleet({ kubeconfig: cluster.kubeconfig, processes: PROCESSES, perProcess: PER_PROCESS, initialState: 'stream', slices: s === 'slices' });
    try {
      const times = await fleet.allSynced(1_800_000);
      const a1 = await apiLoad(config);
      const st = await fleet.stats();
      const ws = st.flatMap((x) => x.watchers);
      const syncS = times.map((t) => (t - fleet.startedAt) / 1000).sort((a, b) => a - b);
      emit('herd', {
        source: s, watchers: fleet.size, processes: PROCESSES,
        syncedSeconds: { first: r1(syncS[0] ?? NaN), median: r1(syncS[Math.floor(syncS.length / 2)] ?? NaN), last: r1(syncS[syncS.length - 1] ?? NaN) },
        MBPerWatcher: r1(ws.reduce((t, w) => t + w.bytes, 0) / ws.length / 2 ** 20), podsPerWatcher: Math.round(ws.reduce((t, w) => t + w.pods, 0) / ws.length),
        watcherCpuSPerWatcher: r1(st.reduce((t, x) => t + x.cpuS, 0) / fleet.size), rssMBPerProcess: Math.round(st.reduce((t, x) => t + x.rssMB, 0) / st.length),
        apiserver: apiDelta(a0, a1, RES[s].plural),
      });
    } finally {
      await fleet.kill();
    }
    await sleep(5000);
  }
}

if (PHASES.has('agent')) {
  for (const s of ['endpoints', 'slices'] as const) {
    const a0 = await apiLoad(config);
    await using agent = startAgent(cluster.kubeconfig, { RETINA_REMOTECONTEXT: 'true', RETINA_RETINAENDPOINTSLICES: s === 'slices' ? 'true' : 'false' });
    const synced = await agent.synced(1_800_000);
    const a1 = await apiLoad(config);
    const syncCpuS = agent.cpuS();
    await sleep(5000);
    const c0 = agent.cpuS();
    await sleep(STEADY_S * 1000);
    const idleCpuPct = r1(((agent.cpuS() - c0) / STEADY_S) * 100);
    emit('agent', {
      source: s, syncedSeconds: r1(synced.ms / 1000), cache: synced.line['pods'], syncCpuS: r1(syncCpuS), idleCpuPct, ...agent.memory(),
      apiserverForSync: apiDelta(a0, a1, RES[s].plural),
      conditions: { agent: `bin/retina-agent --kubeconfig, default plugins, RETINA_REMOTECONTEXT=true, RETINA_RETINAENDPOINTSLICES=${s === 'slices'}`, node: process.version },
    });
  }
}
