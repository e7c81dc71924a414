/**
 * GET /metrics while flows arrive: 3 300 pod-level series (three SeriesFamily counters of 1 100
 * series each, labelled as the Metrics Module labels them, plus the process metrics) updated by a
 * writer that folds FLOWS_PER_S flows a second into them in 10 ms slices (as ring drains do),
 * scraped through real HTTP every SCRAPE_MS. Reports scrape wall time and the event loop's lag
 * (a 5 ms timer's lateness) per side. With BENCH_SCRAPE_BASE=<checkout with dist/> that checkout's
 * metrics code runs too, in the same process, alternated window by window (ABBA), so the ratio
 * holds on a shared machine. Goals (issue 27): scrape p99 under 50 ms, lag p99 under 20 ms.
 * Env: BENCH_SCRAPE_WINDOWS (4 per side), BENCH_SCRAPE_WINDOW_MS (5000), BENCH_SCRAPE_FLOWS (50000).
 */
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../../src/log/index.js';
import * as currentMetrics from '../../src/metrics/index.js';
import { startHttpServer } from '../../src/server/index.js';
import { envInt, summarize } from './summary.js';

const WINDOWS = envInt('BENCH_SCRAPE_WINDOWS', 4);
const WINDOW_MS = envInt('BENCH_SCRAPE_WINDOW_MS', 5_000);
const FLOWS_PER_S = envInt('BENCH_SCRAPE_FLOWS', 50_000);
const SCRAPE_MS = 100;
const SLICE_MS = 10;
const PODS = 100;
const base = process.env['BENCH_SCRAPE_BASE'];

type Metrics = typeof currentMetrics;
const sides: Record<string, Metrics> = {
  current: currentMetrics,
  ...(base ? { base: (await import(pathToFileURL(join(resolve(base), 'dist/src/metrics/index.js')).href)) as Metrics } : {}),
};

/** A registry with 3 × 1 100 series: source pod × destination pod pairs in both directions. */
function build(m: Metrics): { registry: ReturnType<Metrics['createMetricsRegistry']>; write: (n: number) => void; series: number } {
  const registry = m.createMetricsRegistry();
  const labelNames = ['direction', 'source_ip', 'source_namespace', 'source_podname', 'destination_ip', 'destination_namespace', 'destination_podname'];
  const fams = ['adv_forward_count', 'adv_forward_bytes', 'adv_tcpflags_count'].map((n) => new m.SeriesFamily({
    name: `networkobservability_${n}`, help: `${n} by pod`, type: 'counter', labelNames, fixedLabels: 1, maxSeries: 10_000,
  }));
  for (const f of fams) registry.attach(f);
  const tails: string[] = [];
  for (let i = 0; tails.length < 550; i++) {
    const s = i % PODS;
    const d = (s + 1 + Math.floor(i / PODS)) % PODS; // a different peer each pass over the sources
    tails.push(`\x1f10.0.${s >> 8}.${s & 255}\x1fdefault\x1fweb-${s}\x1f10.1.${d >> 8}.${d & 255}\x1fdefault\x1fapi-${d}`);
  }
  for (const f of fams) for (const t of tails) for (const dir of ['EGRESS', 'INGRESS']) f.add(dir, t, 0, 0);
  let k = 0;
  return {
    registry,
    series: fams.reduce((a, f) => a + f.size, 0),
    write(n) {
      for (let j = 0; j < n; j++, k++) {
        const t = tails[k % tails.length] as string;
        const dir = k & 1 ? 'EGRESS' : 'INGRESS';
        for (const f of fams) f.add(dir, t, 64, 0);
      }
    },
  };
}

function scrape(port: number, agent: Agent): Promise<number> {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const req = request({ host: '127.0.0.1', port, path: '/metrics', agent }, (r) => {
      r.resume();
      r.on('end', () => (r.statusCode === 200 ? res(performance.now() - t0) : rej(new Error(`/metrics answered ${r.statusCode}`))));
    });
    req.on('error', rej);
    req.end();
  });
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const built = Object.fromEntries(Object.entries(sides).map(([name, m]) => [name, build(m)]));
const results: Record<string, { scrapeMs: number[]; lagMs: number[]; series: number; bytes: number }> = {};
for (const [name, b] of Object.entries(built)) results[name] = { scrapeMs: [], lagMs: [], series: b.series, bytes: (await b.registry.expose()).body.length };

// ABBA: each side runs WINDOWS windows, first as often as second.
const names = Object.keys(sides);
for (const name of Array.from({ length: WINDOWS }, (_, w) => (w % 2 ? [...names].reverse() : names)).flat()) {
  const b = built[name] as ReturnType<typeof build>;
  const r = results[name] as (typeof results)[string];
  const server = await startHttpServer({
    host: '127.0.0.1', port: 0, log: createLogger({ level: 'error', component: 'bench' }),
    // The base checkout may predate exposeBody (the body as bytes in a reused buffer).
    expose: () => ('exposeBody' in b.registry ? b.registry.exposeBody() : (b.registry as { expose(): Promise<{ contentType: string; body: string }> }).expose()), readiness: { ready: () => true, status: () => [] },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const end = performance.now() + WINDOW_MS;
  let running = true;
  // The flows: each slice folds what arrived since the last one.
  const writer = (async () => {
    let last = performance.now();
    while (running) {
      await sleep(SLICE_MS);
      const now = performance.now();
      b.write(Math.round(((now - last) / 1000) * FLOWS_PER_S));
      last = now;
    }
  })();
  const lagger = (async () => {
    while (running) {
      const t0 = performance.now();
      await sleep(5);
      r.lagMs.push(Math.max(0, performance.now() - t0 - 5));
    }
  })();
  await scrape(server.address.port, agent); // the connection and the first exposition
  while (performance.now() < end) {
    r.scrapeMs.push(await scrape(server.address.port, agent));
    await sleep(SCRAPE_MS);
  }
  running = false;
  await Promise.all([writer, lagger]);
  agent.destroy();
  await server[Symbol.asyncDispose]();
}

const out = Object.fromEntries(Object.entries(results).map(([n, r]) => [n, { series: r.series, bytes: r.bytes, scrapeMs: summarize(r.scrapeMs, 2), eventLoopLagMs: summarize(r.lagMs, 2) }]));
const ratio = (k: 'scrapeMs' | 'eventLoopLagMs', s: 'p50' | 'p99') => out['base'] ? Number((out['base'][k][s] / Math.max(0.01, (out['current'] as (typeof out)[string])[k][s])).toFixed(2)) : undefined;
console.log(JSON.stringify({
  name: 'server/scrape-flows',
  ...out,
  ...(base ? { baseOverCurrent: { scrapeP50: ratio('scrapeMs', 'p50'), scrapeP99: ratio('scrapeMs', 'p99'), lagP99: ratio('eventLoopLagMs', 'p99') } } : {}),
  goals: { scrapeP99Ms: 50, lagP99Ms: 20 },
  conditions: {
    windows: WINDOWS, windowMs: WINDOW_MS, order: 'ABBA', flowsPerSecond: FLOWS_PER_S, sliceMs: SLICE_MS, scrapeEveryMs: SCRAPE_MS, base: base ?? null,
    node: process.version, cpus: cpus().length, loadavg1m: Number((loadavg()[0] ?? 0).toFixed(2)),
  },
}));
