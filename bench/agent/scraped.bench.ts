/**
 * The agent's footprint while Prometheus scrapes it (issue 27): RSS (anonymous and file-backed) every
 * second while a scraper (scraper.ts, its own process, Prometheus' headers, one keep-alive
 * connection) GETs /metrics, and the least-squares slope of RSS after a warm-up, for
 *   - default: the default config in a namespace with no traffic;
 *   - podLevel20k: `enablePodLevel` and remote context on the test control plane holding 20 000
 *     RetinaEndpoints, once synced;
 * each scraped at two rates: `prometheus` every 15 s as a real scrape interval, and `fast` every
 * 100 ms, which does 150 intervals' worth of scrapes a run and so reaches a steady state (or shows
 * growth) in minutes. The windows open when the agent is ready (the warm-up is part of each series,
 * and left out of the slope). With BENCH_SCRAPED_BASE=<checkout> (or a copy of one's bin/ and dist/)
 * that agent runs too, alternated with this one (ABBA), so before/after come from one run.
 * Goals: default ≤ 75 MB and slope < 0.5 MB/hour after warm-up; pod level at 20 000 endpoints < 100 MB.
 * Env: BENCH_SCRAPED_FAST_MINUTES (4), BENCH_SCRAPED_PROM_MINUTES (8; 0 leaves the 15 s rate out),
 * BENCH_SCRAPED_WARMUP_FRACTION_PCT (25), BENCH_SCRAPED_ROUNDS (1), BENCH_SCRAPED_BASE,
 * BENCH_SCRAPED_DEFAULT (1), BENCH_SCRAPED_PODLEVEL (1), BENCH_SCRAPED_SUBJECTS (e.g. `base`: only those). Needs root and kernel BTF; the pod-level case
 * also the Kubernetes binaries.
 */
import { spawn } from 'node:child_process';
import { cpus, loadavg, release } from 'node:os';
import { fileURLToPath } from 'node:url';
import { NsAgent, sleep, stopAll } from '../../test/ebpf/netns.js';
import { nodeBinary, type AgentProcess } from '../../test/e2e/agent-process.js';
import { rssSplit } from '../../test/e2e/proc-stats.js';
import { Bed, median } from '../datapath/setup.js';
import { envInt, summarize, type Summary } from '../server/summary.js';
import { trend } from '../soak/trend.js';
import { ENDPOINTS, abba, agentSubjects, endpointsCluster, podLevelAgent } from './subjects.js';

const envNonNegative = (name: string, def: number): number => (process.env[name] === '0' ? 0 : envInt(name, def));
const RATES = { fast: { everyMs: 100, minutes: envNonNegative('BENCH_SCRAPED_FAST_MINUTES', 4) }, prometheus: { everyMs: 15_000, minutes: envNonNegative('BENCH_SCRAPED_PROM_MINUTES', 8) } };
const WARMUP = envInt('BENCH_SCRAPED_WARMUP_FRACTION_PCT', 25) / 100;
const ROUNDS = envInt('BENCH_SCRAPED_ROUNDS', 1);
const SAMPLE_MS = 1_000;
const only = process.env['BENCH_SCRAPED_SUBJECTS']?.split(',');
const subjects = Object.fromEntries(Object.entries(agentSubjects('BENCH_SCRAPED_BASE')).filter(([n]) => !only || only.includes(n)));
const SCRAPER = fileURLToPath(new URL('./scraper.js', import.meta.url));

interface Scrape { t: number; ms?: number; status?: number; bytes?: number; heapUsedMB?: number; heapTotalMB?: number; externalMB?: number; spacesMB?: Record<string, number>; error?: string }
interface Run {
  scrapes: number; errors: number; bytes: number; scrapeMs: Summary;
  /** RSS at the window's start, at the end of the warm-up, at the end, and the most seen (MB). */
  rssMB: { start: number; warm: number; end: number; max: number };
  anonMB: { start: number; end: number }; fileMB: { start: number; end: number };
  heapUsedMB: { warm: number; end: number }; heapTotalMB: { start: number; warm: number; end: number };
  /** V8's committed heap by space at the first scrape and the last (MB). */
  spacesMB: { start: Record<string, number>; end: Record<string, number> };
  /** Least-squares slope of RSS after the warm-up, MB per hour, with its standard error. */
  rssSlopeMBPerHour: number; rssSlopeStdErr: number; anonSlopeMBPerHour: number;
  /** RSS every 30 s (MB), for the curve. */
  rssEvery30s: number[];
}

/** Scrapes the agent (pid, port; inside `netns` when given) every `everyMs` for `minutes`, sampling its RSS. */
async function scraped(pid: number, port: number, netns: string | undefined, everyMs: number, minutes: number): Promise<Run> {
  const cmd = [...(netns ? ['ip', 'netns', 'exec', netns] : []), nodeBinary(), SCRAPER, String(port), String(everyMs)];
  const scraper = spawn(cmd[0] as string, cmd.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  scraper.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  const t0 = Date.now();
  const samples: [number, ReturnType<typeof rssSplit>][] = [];
  try {
    while (Date.now() - t0 < minutes * 60_000) {
      samples.push([Date.now() - t0, rssSplit(pid)]);
      await sleep(SAMPLE_MS);
    }
  } finally {
    await stopAll([scraper]);
  }
  const scrapes = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Scrape);
  const ok = scrapes.filter((s) => s.status === 200);
  if (ok.length === 0) throw new Error(`no scrape answered 200: ${out.slice(0, 500)}`);
  const warmMs = minutes * 60_000 * WARMUP;
  const after = samples.filter(([t]) => t >= warmMs);
  const okAfter = ok.filter((s) => s.t >= warmMs);
  const first = samples[0]?.[1] as ReturnType<typeof rssSplit>;
  const warm = after[0]?.[1] as ReturnType<typeof rssSplit>;
  const last = samples[samples.length - 1]?.[1] as ReturnType<typeof rssSplit>;
  const rss = trend(after.map(([t, s]) => [t, s.rssMB]));
  const anon = trend(after.map(([t, s]) => [t, s.anonMB]));
  const r = (x: number, d = 2): number => Number(x.toFixed(d));
  return {
    scrapes: ok.length, errors: scrapes.length - ok.length, bytes: ok[ok.length - 1]?.bytes ?? 0, scrapeMs: summarize(ok.map((s) => s.ms as number), 2),
    rssMB: { start: first.rssMB, warm: warm.rssMB, end: last.rssMB, max: Math.max(...samples.map(([, s]) => s.rssMB)) },
    anonMB: { start: first.anonMB, end: last.anonMB }, fileMB: { start: first.fileMB, end: last.fileMB },
    heapUsedMB: { warm: okAfter[0]?.heapUsedMB ?? NaN, end: ok[ok.length - 1]?.heapUsedMB ?? NaN },
    heapTotalMB: { start: ok[0]?.heapTotalMB ?? NaN, warm: okAfter[0]?.heapTotalMB ?? NaN, end: ok[ok.length - 1]?.heapTotalMB ?? NaN },
    spacesMB: { start: ok[0]?.spacesMB ?? {}, end: ok[ok.length - 1]?.spacesMB ?? {} },
    rssSlopeMBPerHour: r(rss.slopePerMinute * 60), rssSlopeStdErr: r(rss.stdErrPerMinute * 60), anonSlopeMBPerHour: r(anon.slopePerMinute * 60),
    rssEvery30s: samples.filter(([t], i) => i === 0 || Math.floor(t / 30_000) !== Math.floor((samples[i - 1]?.[0] as number) / 30_000)).map(([, s]) => s.rssMB),
  };
}

const rates = Object.entries(RATES).filter(([, v]) => v.minutes > 0);
const results: Record<string, Record<string, Record<string, Run[]>>> = {};
const push = (subject: string, kase: string, rate: string, run: Run): void => {
  const c = ((results[subject] ??= {})[kase] ??= {});
  (c[rate] ??= []).push(run);
  console.error(JSON.stringify({ progress: { subject, case: kase, rate, rssMB: run.rssMB, slope: run.rssSlopeMBPerHour, scrapeP99: run.scrapeMs.p99 } }));
};

if (process.env['BENCH_SCRAPED_DEFAULT'] !== '0') {
  await using bed = new Bed();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [rate, { everyMs, minutes }] of rates) {
      for (const name of abba(Object.keys(subjects), round)) {
        await using agent = new NsAgent(bed.client, '', subjects[name] as string[]);
        await agent.started(['packetforward', 'dns']);
        push(name, 'default', rate, await scraped(agent.proc.pid, agent.port, bed.client.name, everyMs, minutes));
      }
    }
  }
}

if (process.env['BENCH_SCRAPED_PODLEVEL'] !== '0') {
  await using ep = await endpointsCluster();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [rate, { everyMs, minutes }] of rates) {
      for (const name of abba(Object.keys(subjects), round)) {
        const started: { agent: AgentProcess; port: number } = await podLevelAgent(ep.cluster, subjects[name] as string[]);
        await using agent = started.agent;
        push(name, 'podLevel20k', rate, await scraped(agent.pid, started.port, undefined, everyMs, minutes));
      }
    }
  }
}

/** One round's run as is; several: the median of each figure. */
function merge(runs: readonly Run[]): Run | Record<string, unknown> {
  if (runs.length === 1) return runs[0] as Run;
  return {
    rounds: runs.length,
    rssMBEnd: median(runs.map((x) => x.rssMB.end)), rssMBMax: median(runs.map((x) => x.rssMB.max)),
    rssSlopeMBPerHour: median(runs.map((x) => x.rssSlopeMBPerHour)), scrapeP99Ms: median(runs.map((x) => x.scrapeMs.p99)), each: runs,
  };
}

console.log(JSON.stringify({
  name: 'agent/scraped',
  ...Object.fromEntries(Object.entries(results).map(([s, cases]) => [s, Object.fromEntries(Object.entries(cases).map(([c, rs]) => [c, Object.fromEntries(Object.entries(rs).map(([rate, runs]) => [rate, merge(runs)]))]))])),
  goals: { defaultRssMB: 75, defaultSlopeMBPerHour: 0.5, podLevel20kRssMB: 100 },
  conditions: {
    rates: RATES, warmupFraction: WARMUP, rounds: ROUNDS, order: 'ABBA', subjects, endpoints: ENDPOINTS, rssSampleMs: SAMPLE_MS,
    kernel: release(), cpus: cpus().length, loadavg1m: Number((loadavg()[0] ?? 0).toFixed(2)),
  },
}));
