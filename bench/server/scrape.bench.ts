/**
 * GET /metrics with 10 000 series: `interface_stats` over 500 interfaces x 20 statistics (plus the
 * process metrics the agent always has), in a registry from createMetricsRegistry(), served by
 * startHttpServer on loopback. Reports the scrape time through real HTTP (keep-alive, as Prometheus
 * scrapes), the exposition alone (registry.metrics(), no HTTP), and one full replace of the 10 000
 * series (what linuxutil does each interval). Wall times move with other load on the host; the
 * *CpuMs figures (this process's user + system time, client side included) do much less, and the
 * 1-minute load average is in the conditions. Goal: a scrape under 50 ms. Env: BENCH_SCRAPES (50),
 * BENCH_INTERFACES (500).
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createLogger } from '../../src/log/index.js';
import { catalog, createMetricsRegistry, replaceSeries } from '../../src/metrics/index.js';
import { startHttpServer } from '../../src/server/index.js';
import { envInt, summarize } from './summary.js';

const SCRAPES = envInt('BENCH_SCRAPES', 50);
const INTERFACES = envInt('BENCH_INTERFACES', 500);
const WARMUP = 5;
/** 20 ethtool/sysfs-style statistic names. */
const STATS = [
  'rx_packets', 'tx_packets', 'rx_bytes', 'tx_bytes', 'rx_errors', 'tx_errors', 'rx_dropped', 'tx_dropped',
  'multicast', 'collisions', 'rx_length_errors', 'rx_over_errors', 'rx_crc_errors', 'rx_frame_errors',
  'rx_fifo_errors', 'rx_missed_errors', 'tx_aborted_errors', 'tx_carrier_errors', 'tx_fifo_errors', 'rx_nohandler',
];

function rows(round: number): [Record<'interface_name' | 'statistic_name', string>, number][] {
  const out: [Record<'interface_name' | 'statistic_name', string>, number][] = [];
  for (let i = 0; i < INTERFACES; i++) {
    // Pod veths as the CNI names them: a prefix and 11 hex digits.
    const iface = i === 0 ? 'eth0' : `lxc${(0x1a2b3c4d5e + i * 7919).toString(16).padStart(11, '0')}`;
    for (const [j, s] of STATS.entries()) out.push([{ interface_name: iface, statistic_name: s }, (i * 1_000_003 + j * 7_919 + round) % 9_999_999_999]);
  }
  return out;
}

function scrape(port: number, agent: Agent): Promise<{ ms: number; bytes: number; status: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request({ host: '127.0.0.1', port, path: '/metrics', agent }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ ms: performance.now() - t0, bytes, status: res.statusCode ?? 0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function promClientVersion(): string {
  const pkg = new URL('../../../node_modules/prom-client/package.json', import.meta.url);
  return (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
}

/** CPU time (user + system) of this process since `from`, in ms: robust to other load on the host. */
function cpuMs(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const metrics = createMetricsRegistry();
const gauge = metrics.gauge(catalog.interfaceStats);
const updateMs: number[] = [];
for (let r = 0; r < 10; r++) {
  const data = rows(r);
  const t0 = performance.now();
  replaceSeries(gauge, data);
  updateMs.push(performance.now() - t0);
}
const series = (await gauge.get()).values.length;

const server = await startHttpServer({
  host: '127.0.0.1',
  port: 0,
  log: createLogger({ level: 'error', component: 'bench' }),
  expose: () => metrics.expose(),
  readiness: { ready: () => true, status: () => [] },
});
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const port = server.address.port;

for (let i = 0; i < WARMUP; i++) await scrape(port, agent);
gc();
const heapBefore = process.memoryUsage().heapUsed;
const http: number[] = [];
const httpCpu: number[] = [];
let bytes = 0;
for (let i = 0; i < SCRAPES; i++) {
  const c0 = process.cpuUsage();
  const r = await scrape(port, agent);
  httpCpu.push(cpuMs(c0));
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  http.push(r.ms);
  bytes = r.bytes;
}
gc();
const heapAfter = process.memoryUsage().heapUsed;

const exposeMs: number[] = [];
const exposeCpu: number[] = [];
for (let i = 0; i < SCRAPES; i++) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await metrics.expose();
  exposeMs.push(performance.now() - t0);
  exposeCpu.push(cpuMs(c0));
}

agent.destroy();
await server[Symbol.asyncDispose]();

console.log(JSON.stringify({
  name: 'server/scrape',
  series,
  bytes,
  scrapeMs: summarize(http),
  scrapeCpuMs: summarize(httpCpu),
  exposeOnlyMs: summarize(exposeMs),
  exposeOnlyCpuMs: summarize(exposeCpu),
  replaceAllSeriesMs: summarize(updateMs),
  heapDeltaBytes: heapAfter - heapBefore,
  goalMs: 50,
  conditions: {
    interfaces: INTERFACES, statistics: STATS.length, scrapes: SCRAPES, warmup: WARMUP, keepAlive: true,
    processMetrics: true, node: process.version, promClient: promClientVersion(), cpus: cpus().length, loadavg1m: Number((loadavg()[0] ?? 0).toFixed(2)),
  },
}));
