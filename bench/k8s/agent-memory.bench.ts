/**
 * Agent memory with its watchers (RetinaEndpoints, Services, Nodes) and 20 000 endpoints cached.
 * (1) In this process: heap taken by the watch stores and the IP cache (gc before and after sync).
 * (2) The real agent (bin/retina-agent --kubeconfig, remote context): RSS once its cache has synced.
 * Goals: cache heap under 60 MB, whole-agent RSS under 100 MB.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { IpCache } from '../../src/cache/index.js';
import { startAgentWatch } from '../../src/k8s/index.js';
import { createNamespace, deleteNamespace, eventually, ROOT, startCluster } from '../../test/integration/harness.js';
import { uniqueId } from '../../test/integration/operator-helpers.js';
import { createEndpoints } from './endpoints.js';

const N = 20_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (make bench does)');

await using cluster = await startCluster();
const { client } = cluster;
const ns = uniqueId('bench-mem');
await createNamespace(client, ns);
const t0 = Date.now();
await createEndpoints(client, ns, N);
const createMs = Date.now() - t0;

// (1) heap of the stores and the cache, in this process
gc();
const heap0 = process.memoryUsage().heapUsed;
const cache = new IpCache();
const watch = startAgentWatch({ client, cache, remoteContext: true });
await watch.waitForSync();
await eventually('all endpoints cached', 60_000, () => cache.stats().pods >= N);
gc();
await new Promise((r) => setTimeout(r, 200));
gc();
const cacheHeapMB = (process.memoryUsage().heapUsed - heap0) / 2 ** 20;
await watch[Symbol.asyncDispose]();

// (2) the whole agent process: as shipped, and with a smaller young generation (V8 flag), which
// keeps the burst of parsing 20 000 objects from leaving 30 MB of committed heap behind.
async function agentRss(nodeOptions: string): Promise<{ rssMB: number; hwmMB: number; synced: Record<string, unknown>; plugins: string }> {
  const agent = spawn(`${ROOT}bin/retina-agent`, ['--kubeconfig', cluster.kubeconfig], {
    env: { PATH: process.env['PATH'], NODE_OPTIONS: nodeOptions, RETINA_REMOTECONTEXT: 'true', RETINA_APISERVER_HOST: '127.0.0.1', RETINA_APISERVER_PORT: '0', RETINA_LOGLEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  agent.stderr.setEncoding('utf8');
  agent.stderr.on('data', (d: string) => (log += d));
  await eventually('agent IP cache synced', 120_000, () => /"msg":"IP cache synced"/.test(log), 200);
  await new Promise((r) => setTimeout(r, 5000));
  const status = readFileSync(`/proc/${agent.pid}/status`, 'utf8');
  const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  const synced = JSON.parse(log.split('\n').find((l) => l.includes('"IP cache synced"')) as string) as Record<string, unknown>;
  agent.kill('SIGTERM');
  await new Promise((r) => agent.once('exit', r));
  const started = /"msg":"plugins started".*?"running":(\[[^\]]*\])/.exec(log)?.[1] ?? 'n/a';
  return { rssMB: kb('VmRSS') / 1024, hwmMB: kb('VmHWM') / 1024, synced, plugins: started };
}
const shipped = await agentRss('');
const smallYoung = await agentRss('--max-semi-space-size=2');
await deleteNamespace(client, ns);
const f = (x: number): number => Number(x.toFixed(1));
console.log(JSON.stringify({
  name: 'k8s-agent-memory-20k-endpoints', endpoints: N, cacheHeapMB: f(cacheHeapMB), agentRssMB: f(shipped.rssMB), agentPeakRssMB: f(shipped.hwmMB),
  agentRssMBWithMaxSemiSpace2: f(smallYoung.rssMB), agentPeakRssMBWithMaxSemiSpace2: f(smallYoung.hwmMB),
  goal: 'cache heap < 60 MB, agent RSS < 100 MB',
  conditions: {
    createSeconds: Number((createMs / 1000).toFixed(1)), agentCache: { pods: shipped.synced['pods'], services: shipped.synced['services'], nodes: shipped.synced['nodes'] },
    pluginsRunning: shipped.plugins, node: process.version,
  },
}));
