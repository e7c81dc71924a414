/**
 * Agents at scale (issue 40, items 2 and 3), on the test control plane holding
 * BENCH_AGENTS_ENDPOINTS (150 000) RetinaEndpoints, written directly (no pods). Phases
 * (BENCH_AGENTS_PHASES, all by default), one JSON line each:
 * - `one`: one agent's watch layer in this process (startAgentWatch, remote context, WatchList):
 *   time to first sync and its bytes, heap once synced; bytes and events per endpoint change
 *   (BENCH_AGENTS_CHANGES at BENCH_AGENTS_RATE a second); the cost of a 410 (objects deleted in
 *   etcd and history compacted while the API server is down: relist) and of a reconnect (the API
 *   server restarted: resume from the resourceVersion).
 * - `agent`: the real agent (bin/retina-agent, default plugins, remote context): time to sync, RSS,
 *   CPU idle over BENCH_AGENTS_STEADY_SECONDS and under churn at BENCH_AGENTS_RATE changes a second.
 *   Goal: RSS <= 150 MB and CPU <= 1 % of a core at 150 000 endpoints, steady state.
 * - `local`: local context's watch (this node's Pods): what it caches and receives, and the API
 *   server's audit log of its requests (each carries fieldSelector=spec.nodeName=...).
 * - `fleet`: BENCH_AGENTS_PROCESSES processes of BENCH_AGENTS_PER_PROCESS watch layers each
 *   (bench/k8s/watchers/watcher.ts: the agent's watch layer alone) started together, then churn
 *   while all watch, then all killed and started again together, then the API server restarted
 *   under them: the time until all are synced, the API server's CPU, in-flight peaks, request
 *   latency p99 (its histograms, and a probe's PATCHes 10 a second), watch events and bytes it sent.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { IpCache } from '../../src/cache/index.js';
import { collectionPath, createRestClient, loadRestConfig, objectPath, resources, startAgentWatch, type KubeList, type PodWire, type ReflectorEvent, type RestClient } from '../../src/k8s/index.js';
import { compactEtcd, createNamespace, eligible, etcdDelete, eventually, listAll, restartApiserver, ROOT, startApiserver, startCluster, stopApiserver } from '../../test/integration/harness.js';
import { createEndpoints, endpointName } from './endpoints.js';
import { startAgent } from './watchers/agent-process.js';
import { apiDelta, apiLoad, sampleInflight } from './watchers/apiserver.js';
import { churn, probe, quantileOf } from './watchers/churn.js';
import { putEndpointsInEtcd } from './watchers/etcd-fill.js';
import { startFleet, type Fleet } from './watchers/fleet.js';
import { MARKER_LABEL } from './watchers/protocol.js';
import { envInt } from '../server/summary.js';

const N = envInt('BENCH_AGENTS_ENDPOINTS', 150_000);
const CHANGES = envInt('BENCH_AGENTS_CHANGES', 2000);
const RATE = envInt('BENCH_AGENTS_RATE', 50);
const STEADY_S = envInt('BENCH_AGENTS_STEADY_SECONDS', 60);
const PROCESSES = envInt('BENCH_AGENTS_PROCESSES', 8);
const PER_PROCESS = envInt('BENCH_AGENTS_PER_PROCESS', 2);
const PHASES = new Set((process.env['BENCH_AGENTS_PHASES'] ?? 'one,agent,local,fleet').split(','));
const NS = 'bench-agents-scale';
const LOCAL_NS = 'bench-agents-local';
const maybeGc = (globalThis as { gc?: () => void }).gc;
if (!maybeGc) throw new Error('run with node --expose-gc (make bench does)');
const gc: () => void = maybeGc;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const r1 = (x: number): number => Number(x.toFixed(1));
const load = (): number[] => loadavg().map(r1);
const emit = (name: string, o: Record<string, unknown>): void => console.log(JSON.stringify({ name: `k8s-agents-scale-${name}`, endpoints: N, ...o, loadavg: load() }));

// The API server's audit log of Pod lists and watches (local context's proof), when this bench starts the control plane.
const AUDIT_DIR = `${ROOT}.cache/k8s/audit`;
const AUDIT_LOG = `${AUDIT_DIR}/audit.log`;
mkdirSync(AUDIT_DIR, { recursive: true });
writeFileSync(`${AUDIT_DIR}/policy.yaml`, [
  'apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: [RequestReceived, ResponseStarted]', 'rules:',
  '- level: Metadata', '  verbs: [list, watch, get]', '  resources: [{group: "", resources: [pods]}]', '- level: None', '',
].join('\n'));
process.env['RETINA_K8S_APISERVER_FLAGS'] ??= `--audit-policy-file=${AUDIT_DIR}/policy.yaml --audit-log-path=${AUDIT_LOG} --audit-log-maxsize=200 --audit-log-maxbackup=1`;

await using cluster = await startCluster();
const { client } = cluster;
const config = await loadRestConfig({ kubeconfig: cluster.kubeconfig, env: {} });

async function ensureNamespace(ns: string): Promise<void> {
  await createNamespace(client, ns).catch(() => undefined);
}
async function count(ns: string): Promise<number> {
  // A consistent LIST, from etcd: slow when the API server is short of CPU, hence the long timeout.
  const l = await client.request<KubeList<unknown>>('GET', collectionPath(resources.retinaEndpoints, ns), { query: { limit: 1 }, timeoutMs: 300_000 });
  return l.items.length + (l.metadata.remainingItemCount ?? 0);
}

// The endpoints: what an earlier run left is kept, the rest created (48 requests at a time).
await ensureNamespace(NS);
const existing = await count(NS);
const tc = performance.now();
// Through etcd by default (BENCH_AGENTS_FILL=api: POSTs, about 40 a second on a loaded 2-core machine).
if (existing < N) {
  if (process.env['BENCH_AGENTS_FILL'] === 'api') await createEndpoints(client, NS, N, Math.max(0, existing - 500));
  else await putEndpointsInEtcd(NS, N, existing > 0 ? Math.max(0, existing - 500) : 0);
  await eventually('the API server lists every endpoint', 600_000, async () => (await count(NS)) >= N, 2000);
}
const created = { before: existing, seconds: r1((performance.now() - tc) / 1000), total: await count(NS) };
if (created.total < N) throw new Error(`${created.total} RetinaEndpoints in ${NS}, ${N} wanted`);
emit('setup', { created: { via: process.env['BENCH_AGENTS_FILL'] === 'api' ? 'api' : 'etcd', ...created, perSecond: created.total > existing ? r1((created.total - existing) / created.seconds) : null } });

const reStats = (w: { stats(): { resource: string; lists: number; gone: number; reconnects: number; errors: number; events: number }[] }) =>
  w.stats().find((s) => s.resource.startsWith('retinaendpoints')) as { lists: number; gone: number; reconnects: number; errors: number; events: number };
const patchMarker = async (c: RestClient, i: number, marker: string): Promise<void> => {
  await eventually('the marker written', 300_000, () => c.request('PATCH', objectPath(resources.retinaEndpoints, NS, endpointName(i).name), {
    contentType: 'application/merge-patch+json', body: { spec: { labels: { [MARKER_LABEL]: marker } } },
  }).then(() => true), 500);
};

type Initial = 'list' | 'stream';
const modes = (k: string): Initial[] => (process.env[k] ?? 'stream,list').split(',').filter((m): m is Initial => m === 'list' || m === 'stream');

async function oneLayer(mode: Initial): Promise<void> {
  const c = createRestClient(config, { userAgent: `retina-bench-one-${mode}` });
  const marks: { ev: ReflectorEvent; at: number; bytes: number; cpuUs: number }[] = [];
  const cpuUs = (): number => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const cache = new IpCache();
  const t0 = performance.now();
  const cpu0 = cpuUs();
  const a00 = await apiLoad(config);
  const watch = startAgentWatch({
    client: c, cache, remoteContext: true, initialState: mode,
    onEvent: (ev, res) => void (res.startsWith('retinaendpoints') && marks.push({ ev, at: performance.now(), bytes: c.bytesReceived(), cpuUs: cpuUs() })),
  });
  await watch.waitForSync();
  const firstSync = { ms: Math.round(performance.now() - t0), cpuS: r1((cpuUs() - cpu0) / 1e6), MB: r1(c.bytesReceived() / 2 ** 20), pods: cache.stats().pods, apiserver: apiDelta(a00, await apiLoad(config)) };
  gc();
  await sleep(200);
  gc();
  const heapMB = r1((process.memoryUsage().heapUsed - heap0) / 2 ** 20);

  // Changes: bytes and events per change as this watcher receives them.
  const b0 = c.bytesReceived();
  const e0 = reStats(watch).events;
  const a0 = await apiLoad(config);
  const ch = await churn(client, NS, { count: CHANGES, perSecond: RATE, total: N, marker: `one${Date.now()}` });
  await eventually('every change received', 120_000, () => reStats(watch).events >= e0 + CHANGES - ch.failed, 100);
  const a1 = await apiLoad(config);
  const perChange = { changes: CHANGES - ch.failed, ratePerS: r1(CHANGES / ch.seconds), bytesPerChange: Math.round((c.bytesReceived() - b0) / (CHANGES - ch.failed)), eventsPerChange: r1((reStats(watch).events - e0) / (CHANGES - ch.failed)), patchP99Ms: quantileOf(ch.latenciesMs, 0.99), apiserver: apiDelta(a0, a1) };

  // A 410: an endpoint deleted in etcd and the history compacted while the API server is down.
  const s410 = reStats(watch);
  const m410 = marks.length;
  await stopApiserver();
  await etcdDelete(`/registry/retina.sh/retinaendpoints/${NS}/${endpointName(N - 1).name}`);
  await compactEtcd();
  let t = performance.now();
  await startApiserver();
  const apiserverStartMs = Math.round(performance.now() - t);
  await eventually('a 410 and a relist', 600_000, () => reStats(watch).gone > s410.gone && reStats(watch).lists > s410.lists, 100);
  const gone = marks.slice(m410).find((m) => m.ev === 'gone');
  const relisted = marks.slice(m410).find((m) => m.ev === 'relisted');
  const cost410 = gone && relisted
    ? { goneToRelistedMs: Math.round(relisted.at - gone.at), MB: r1((relisted.bytes - gone.bytes) / 2 ** 20), cpuS: r1((relisted.cpuUs - gone.cpuUs) / 1e6), apiserverStartMs, podsAfter: cache.stats().pods }
    : { error: 'no gone/relisted events seen', marks: marks.slice(m410).map((m) => m.ev) };
  await createEndpoints(client, NS, N, N - 1);

  // A reconnect: the API server restarted (no history lost): resume or relist, and when a change arrives again.
  const sr = reStats(watch);
  const br = c.bytesReceived();
  const cr = cpuUs();
  t = performance.now();
  await restartApiserver();
  const restartMs = performance.now() - t;
  const marker = `r${Date.now()}`;
  await patchMarker(client, 7, marker);
  await eventually('the marker in the cache', 600_000, () => cache.pod(NS, endpointName(7).name)?.labels[MARKER_LABEL] === marker, 100);
  const srr = reStats(watch);
  const reconnect = {
    apiserverRestartMs: Math.round(restartMs), changeSeenMsAfterReady: Math.round(performance.now() - t - restartMs), relists: srr.lists - sr.lists, gone: srr.gone - sr.gone,
    reconnects: srr.reconnects - sr.reconnects, errors: srr.errors - sr.errors, MB: r1((c.bytesReceived() - br) / 2 ** 20), cpuS: r1((cpuUs() - cr) / 1e6),
  };
  await watch[Symbol.asyncDispose]();
  c.close();
  emit('one-watch-layer', { initialState: mode, firstSync, heapMB, perChange, cost410, reconnect, conditions: { process: 'the bench process (src/k8s startAgentWatch + IpCache only)', node: process.version } });
}
if (PHASES.has('one')) for (const mode of modes('BENCH_AGENTS_ONE_MODES')) await oneLayer(mode);

if (PHASES.has('agent')) {
  await using agent = startAgent(cluster.kubeconfig, { RETINA_REMOTECONTEXT: 'true' });
  const synced = await agent.synced(900_000);
  await sleep(30_000);
  const c0 = agent.cpuS();
  await sleep(STEADY_S * 1000);
  const idleCpuPct = r1(((agent.cpuS() - c0) / STEADY_S) * 100);
  const idleMem = agent.memory();
  const c1 = agent.cpuS();
  const t = performance.now();
  const ch = await churn(client, NS, { count: RATE * STEADY_S, perSecond: RATE, total: N, first: 1000, marker: `agent${Date.now()}` });
  const churnCpuPct = r1(((agent.cpuS() - c1) / ((performance.now() - t) / 1000)) * 100);
  const churnMem = agent.memory();
  const f = (m: { rssMB: number; peakRssMB: number; anonMB: number }): Record<string, number> => ({ rssMB: r1(m.rssMB), peakRssMB: r1(m.peakRssMB), anonMB: r1(m.anonMB) });
  emit('agent-remote-context', {
    syncMs: Math.round(synced.ms), cache: { pods: synced.line['pods'], services: synced.line['services'], nodes: synced.line['nodes'] },
    idle: { cpuPctOfACore: idleCpuPct, ...f(idleMem), seconds: STEADY_S }, churn: { perSecond: r1(ch.latenciesMs.length / ch.seconds), cpuPctOfACore: churnCpuPct, ...f(churnMem) },
    goal: 'RSS <= 150 MB, CPU <= 1 % of a core at 150 000 endpoints, steady state',
    conditions: { agent: 'bin/retina-agent --kubeconfig, default plugins, RETINA_REMOTECONTEXT=true', node: process.version },
  });
}

if (PHASES.has('local')) {
  // 100 pods on kwok-node-0 and 100 on kwok-node-1; the watch of kwok-node-0 must see only its own.
  await ensureNamespace(LOCAL_NS);
  const have = new Set((await listAll<PodWire>(client, resources.pods, LOCAL_NS)).map((p) => p.metadata.name));
  for (let i = 0; i < 200; i++) {
    const name = `local-${i}`;
    if (have.has(name)) continue;
    await client.request('POST', collectionPath(resources.pods, LOCAL_NS), {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: { app: `local${i % 5}` } }, spec: { nodeName: `kwok-node-${i % 2}`, containers: [{ name: 'c', image: 'registry.invalid/x' }], terminationGracePeriodSeconds: 0 } },
    });
  }
  await eventually('the local pods running', 300_000, async () => (await listAll<PodWire>(client, resources.pods, LOCAL_NS)).filter(eligible).length >= 200, 1000);
  const UA = `retina-bench-local-context/${Date.now()}`;
  const c = createRestClient(config, { userAgent: UA });
  const cache = new IpCache();
  const t = performance.now();
  const watch = startAgentWatch({ client: c, cache, remoteContext: false, nodeName: 'kwok-node-0', initialState: 'stream' });
  await watch.waitForSync();
  await eventually('the node\'s pods cached', 60_000, () => cache.stats().pods >= 100, 100);
  const syncMs = Math.round(performance.now() - t);
  await sleep(2000);
  const pods = cache.stats().pods;
  const bytes = c.bytesReceived();
  await watch[Symbol.asyncDispose]();
  c.close();
  let audit: Record<string, unknown> = { error: `no audit log at ${AUDIT_LOG}: the control plane was started without RETINA_K8S_APISERVER_FLAGS` };
  if (existsSync(AUDIT_LOG)) {
    // A watch is logged when it ends (stage ResponseComplete): wait for the API server to write it.
    type AuditEvent = { verb: string; requestURI: string; userAgent: string };
    const mine = await eventually('the audit log of the local watch', 60_000, () => {
      const found = readFileSync(AUDIT_LOG, 'utf8').split('\n').filter((l) => l.includes(UA)).map((l) => JSON.parse(l) as AuditEvent).filter((e) => e.userAgent === UA);
      return found.length ? found : undefined;
    }, 500).catch(() => [] as AuditEvent[]);
    const selector = encodeURIComponent('spec.nodeName=kwok-node-0');
    audit = {
      requests: mine.length, verbs: [...new Set(mine.map((e) => e.verb))], withNodeSelector: mine.filter((e) => e.requestURI.includes(`fieldSelector=${selector}`)).length,
      example: mine[0]?.requestURI,
    };
  }
  emit('local-context', { node: 'kwok-node-0', podsInCluster: 200, podsCached: pods, syncMs, MB: r1(bytes / 2 ** 20), audit, conditions: { watch: 'startAgentWatch remoteContext=false', node: process.version } });
}

if (PHASES.has('fleet')) {
  const size = PROCESSES * PER_PROCESS;
  const syncTimes = (f: Fleet, times: number[]): Record<string, number | null> => {
    const d = times.map((x) => x - f.startedAt);
    return { p50Ms: quantileOf(d, 0.5), p90Ms: quantileOf(d, 0.9), allMs: quantileOf(d, 1) };
  };
  /** Starts a fleet with a probe writing and the API server sampled; returns when all are synced. */
  const herd = async (mode: Initial, what: string): Promise<{ fleet: Fleet; report: Record<string, unknown> }> => {
    await using sampler = sampleInflight(config);
    const p = probe(client, NS, N);
    const a0 = await apiLoad(config);
    const fleet = startFleet({ kubeconfig: cluster.kubeconfig, processes: PROCESSES, perProcess: PER_PROCESS, initialState: mode });
    const times = await fleet.allSynced(1_800_000);
    const a1 = await apiLoad(config);
    const pr = await p.stop();
    const st = await fleet.stats();
    const w = st.flatMap((s) => s.watchers);
    return {
      fleet,
      report: {
        what, synced: syncTimes(fleet, times), apiserver: apiDelta(a0, a1), peaks: sampler.peaks(),
        probe: { patches: pr.latenciesMs.length, failed: pr.failed, p50Ms: quantileOf(pr.latenciesMs, 0.5), p99Ms: quantileOf(pr.latenciesMs, 0.99), maxMs: quantileOf(pr.latenciesMs, 1) },
        perWatcherMB: r1(w.reduce((s, x) => s + x.bytes, 0) / w.length / 2 ** 20),
        perProcess: { rssMB: r1(Math.max(...st.map((s) => s.rssMB))), heapMB: r1(Math.max(...st.map((s) => s.heapMB))), cpuS: r1(st.reduce((s, x) => s + x.cpuS, 0) / st.length) },
      },
    };
  };
  for (const [k, mode] of modes('BENCH_AGENTS_FLEET_MODES').entries()) {
    const start = await herd(mode, 'started together');
    const fleet = start.fleet;
    emit(`fleet-${mode}-start`, { watchers: size, processes: PROCESSES, perProcess: PER_PROCESS, initialState: mode, ...start.report });
    if (k === 0) {
      // Churn while every watcher watches: what the API server sends per change.
      const s0 = (await fleet.stats()).flatMap((s) => s.watchers);
      const a0 = await apiLoad(config);
      const marker = `fleet${Date.now()}`;
      const ch = await churn(client, NS, { count: CHANGES, perSecond: RATE, total: N, first: 5000, marker });
      await eventually('every watcher saw the last change', 300_000, async () => (await fleet.stats()).every((s) => s.watchers.every((w) => w.marker === marker)), 500);
      const a1 = await apiLoad(config);
      const s1 = (await fleet.stats()).flatMap((s) => s.watchers);
      const bytesPerWatcherPerChange = Math.round((s1.reduce((s, x) => s + x.bytes, 0) - s0.reduce((s, x) => s + x.bytes, 0)) / s1.length / CHANGES);
      const steady = { changes: CHANGES, ratePerS: r1(CHANGES / ch.seconds), bytesPerWatcherPerChange, patchP99Ms: quantileOf(ch.latenciesMs, 0.99), apiserver: apiDelta(a0, a1) };
      emit(`fleet-${mode}-steady`, { watchers: size, ...steady });
    }
    // The API server restarted under them (a failover): when does a change reach every watcher again, and who relisted?
    const r0 = (await fleet.stats()).flatMap((s) => s.watchers);
    const ra = await apiLoad(config);
    let failover: Record<string, unknown>;
    {
      await using sampler = sampleInflight(config);
      const t = performance.now();
      await restartApiserver();
      const readyMs = performance.now() - t;
      const m = `failover${Date.now()}`;
      await patchMarker(client, 11, m);
      await eventually('every watcher saw the change after the restart', 900_000, async () => (await fleet.stats()).every((s) => s.watchers.every((w) => w.marker === m)), 500);
      const allMs = performance.now() - t - readyMs;
      const rb = await apiLoad(config);
      const r1s = (await fleet.stats()).flatMap((s) => s.watchers);
      failover = {
        apiserverRestartMs: Math.round(readyMs), changeAtAllMsAfterReady: Math.round(allMs),
        watchersGone: r1s.filter((w, i) => w.gone > (r0[i]?.gone ?? 0)).length, watchersRelisted: r1s.filter((w, i) => w.lists > (r0[i]?.lists ?? 0)).length, gone: r1s.reduce((s, w, i) => s + w.gone - (r0[i]?.gone ?? 0), 0),
        perWatcherMB: r1((r1s.reduce((s, x) => s + x.bytes, 0) - r0.reduce((s, x) => s + x.bytes, 0)) / r1s.length / 2 ** 20),
        apiserver: apiDelta(ra, rb), peaks: sampler.peaks(),
      };
    }
    await fleet.kill();
    emit(`fleet-${mode}-failover`, { watchers: size, initialState: mode, ...failover, conditions: { watcher: 'bench/k8s/watchers/watcher.ts: src/k8s startAgentWatch (remote context) + IpCache, no plugins', node: process.version } });
  }
}
