/**
 * Main-thread CPU of one metrics interval of the idle agent's periodic work, this checkout against
 * another (BENCH_INTERVAL_BASE=<checkout with dist/>, e.g. the previous main), alternated interval by
 * interval in one process, so the ratio holds on a shared, noisy machine:
 *   - linuxutil: read /proc/net (7 files), parse, build rows, replace its six gauge families
 *     (readAll + publish, the interface part with no links), in a registry of each side's own;
 *   - gauges: 3 300 series replaced with unchanged values (the scrape bench's pod-level count);
 *   - writes (this checkout only): 3 300 values written to prom-client that all changed, through
 *     `gauge.set(labels, v)` and through bound children (`gauge.labels(...)`, made once), against
 *     comparing with the last value first when none changed: which way of writing is cheapest.
 * Two /proc cases: `live` (this host's /proc: counters move with other traffic) and `quiet` (a copy
 * of /proc/net taken once: what a node with no traffic in between sees, e.g. an idle namespace).
 * Figures: CPU per interval (process.cpuUsage, user + system) in µs, median over the intervals, and
 * as % of a core at the agent's 10 s interval. Code runs hot here (thousands of intervals); in the
 * agent every interval runs colder, so absolute figures are lower than the agent's, ratios hold.
 * Env: BENCH_INTERVAL_ROUNDS (400), BENCH_INTERVAL_BASE.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as currentMetrics from '../../src/metrics/index.js';
import { Gauge } from '../../src/metrics/prom.js';
import * as currentCollect from '../../src/plugins/linux/linuxutil/collect.js';
import * as currentInterfaces from '../../src/plugins/linux/linuxutil/interfaces.js';
import { PROC_FILES, ParseCache } from '../../src/plugins/linux/linuxutil/proc.js';
import { envInt, summarize } from '../server/summary.js';

const ROUNDS = envInt('BENCH_INTERVAL_ROUNDS', 400);
const INTERVAL_S = 10;
const SERIES = 3_300;
const base = process.env['BENCH_INTERVAL_BASE'];

interface Side {
  readonly metrics: typeof currentMetrics;
  readonly collect: typeof currentCollect;
  readonly interfaces: typeof currentInterfaces;
}
const load = async (root: string): Promise<Side> => {
  const u = (p: string) => pathToFileURL(join(resolve(root), 'dist/src', p)).href;
  return {
    metrics: (await import(u('metrics/index.js'))) as typeof currentMetrics,
    collect: (await import(u('plugins/linux/linuxutil/collect.js'))) as typeof currentCollect,
    interfaces: (await import(u('plugins/linux/linuxutil/interfaces.js'))) as typeof currentInterfaces,
  };
};
const sides: Record<string, Side> = {
  current: { metrics: currentMetrics, collect: currentCollect, interfaces: currentInterfaces },
  ...(base ? { base: await load(base) } : {}),
};

const quiet = mkdtempSync(join(tmpdir(), 'rt-interval-'));
mkdirSync(join(quiet, 'net'));
for (const f of Object.values(PROC_FILES)) {
  try {
    // Read, not copied: procfs files have size 0, and copyFile copies nothing.
    writeFileSync(join(quiet, f.path), readFileSync(join('/proc', f.path)));
  } catch {
    /* an optional file (no IPv6) */
  }
}

/** One interval's work, as a closure over a side's own registry and caches. */
type Job = () => Promise<void> | void;
function linuxutilJob(side: Side, procRoot: string): Job {
  const metrics = side.metrics.createMetricsRegistry({ processMetrics: false });
  const interfaces = new side.interfaces.InterfaceReader(() => [], [], undefined);
  const cache = new ParseCache(); // the base's readAll takes two arguments and ignores it
  return async () => {
    const reading = await side.collect.readAll(interfaces, procRoot, cache);
    side.collect.publish(metrics, reading);
  };
}
function gaugesJob(side: Side): Job {
  const metrics = side.metrics.createMetricsRegistry({ processMetrics: false });
  const g = metrics.gauge(currentMetrics.catalog.interfaceStats);
  const rows = Array.from({ length: SERIES }, (_, i) => [{ interface_name: `lxc${i % 165}`, statistic_name: `stat_${Math.floor(i / 165)}` }, i] as const);
  return () => side.metrics.replaceSeries(g, rows);
}

const cases: Record<string, (s: Side) => Job> = {
  linuxutilLive: (s) => linuxutilJob(s, '/proc'),
  linuxutilQuiet: (s) => linuxutilJob(s, quiet),
  gauges3300Unchanged: gaugesJob,
};

/** One way of writing 3 300 values, on a gauge of its own. */
function writesJob(how: 'set' | 'child' | 'compare'): Job {
  const g = new Gauge({ name: `rt_interval_${how}`, help: 'h', labelNames: ['interface_name', 'statistic_name'], registers: [] });
  const rows = Array.from({ length: SERIES }, (_, i) => [{ interface_name: `lxc${i % 165}`, statistic_name: `stat_${Math.floor(i / 165)}` }, i] as const);
  const children = rows.map(([l]) => g.labels(l));
  const last = rows.map(([, v]) => v);
  let round = 0;
  if (how === 'set') return () => void rows.forEach(([l, v]) => g.set(l, v + ++round));
  if (how === 'child') return () => void children.forEach((c, j) => c.set(j + ++round));
  return () => void rows.forEach(([l, v], j) => v !== last[j] && g.set(l, v));
}

const out: Record<string, Record<string, unknown>> = {};
try {
  for (const [name, make] of Object.entries(cases)) {
    const jobs = Object.entries(sides).map(([side, s]) => ({ side, job: make(s), us: [] as number[] }));
    for (let r = 0; r < ROUNDS; r++) {
      // Alternated, ABBA: each side runs first as often as second.
      for (const j of r % 2 ? [...jobs].reverse() : jobs) {
        const c0 = process.cpuUsage();
        await j.job();
        const d = process.cpuUsage(c0);
        j.us.push(d.user + d.system);
      }
    }
    const row: Record<string, unknown> = {};
    for (const j of jobs) {
      const s = summarize(j.us.slice(Math.floor(ROUNDS / 10)), 0); // the first tenth warms up
      row[j.side] = { cpuUsPerIntervalP50: s.p50, cpuUsPerIntervalMean: s.mean, percentOfCoreAt10s: Number(((100 * s.p50) / 1e6 / INTERVAL_S).toFixed(4)) };
    }
    const b = row['base'] as { cpuUsPerIntervalP50: number } | undefined;
    const c = row['current'] as { cpuUsPerIntervalP50: number };
    if (b) row['baseOverCurrent'] = Number((b.cpuUsPerIntervalP50 / Math.max(1, c.cpuUsPerIntervalP50)).toFixed(2));
    out[name] = row;
  }
  const writes = (['set', 'child', 'compare'] as const).map((how) => ({ how, job: writesJob(how), us: [] as number[] }));
  for (let r = 0; r < ROUNDS; r++) {
    for (const w of r % 2 ? [...writes].reverse() : writes) {
      const c0 = process.cpuUsage();
      void w.job();
      const d = process.cpuUsage(c0);
      w.us.push(d.user + d.system);
    }
  }
  out['writes3300'] = Object.fromEntries(writes.map((w) => [
    { set: 'gaugeSetAllChanged', child: 'boundChildSetAllChanged', compare: 'compareNoneChanged' }[w.how],
    { cpuUsP50: summarize(w.us.slice(Math.floor(ROUNDS / 10)), 0).p50 },
  ]));
} finally {
  rmSync(quiet, { recursive: true, force: true });
}
console.log(JSON.stringify({
  name: 'agent/interval',
  ...out,
  conditions: { rounds: ROUNDS, order: 'ABBA per interval', base: base ?? null, series: SERIES, cpus: cpus().length, loadavg1m: Number((loadavg()[0] ?? 0).toFixed(2)) },
}));
