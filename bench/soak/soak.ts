/**
 * The soak (`make soak`; not part of `make test` or `make bench`): the pod-level pipeline for
 * SOAK_MINUTES (30) on this host's kernel and the test control plane, and one JSON line of figures
 * with goals and pass/fail; the exit status is 1 when a goal is missed.
 *
 * Set-up (bench/datapath/pods.ts): 100 pods, each a network namespace on a veth, registered as Pods
 * on a Node nobody manages (no kubelet, no kwok: the status we write, Running with the veth's
 * address, stays), the operator in process accepting a MetricsConfiguration, and `bin/retina-agent`
 * (enablePodLevel, local context, packetparser with `dataAggregationLevel: low`, so every packet is a
 * record through the ring, the enricher and the Metrics Module) with the default plugins.
 * Load: 50 000 UDP packets/s round-robin from the pods (pktgen). For the soak's minutes:
 *   - 5 pods/s replaced: a new Pod (new name) takes the address of one of the 100 veths, then the
 *     old one is deleted, so the traffic keeps coming and each deleted pod's series must go;
 *   - the MetricsConfiguration's context labels switched between two label sets every minute;
 *   - a Prometheus-style scrape of /metrics every 10 s (duration to the last byte, series count,
 *     the agent's heap, event-loop delay and lost events); RSS from /proc every 2 s.
 * Then a cool-down (churn stopped, the first label set back, load on): the `adv_*` series count must
 * come back to its baseline, taken before the churn. Memory slopes are least-squares fits over the
 * samples after the warm-up (SOAK_WARMUP_MINUTES, default a fifth of the run, at most 5).
 * Env: SOAK_MINUTES (30, may be fractional), SOAK_WARMUP_MINUTES, SOAK_COOLDOWN_SECONDS (60),
 * SOAK_PODS (100), SOAK_PPS (50000), SOAK_CHURN_PER_SECOND (5), SOAK_SCRAPE_EVERY_MS (10000), SOAK_AGENT (the agent's
 * command: this checkout's bin/retina-agent; another checkout's, or a copy of its bin/ and dist/, gives
 * a 'before' to alternate with). The event loop's lag is also measured from outside: GET /healthz
 * every 100 ms (its answer waits for whatever holds the loop: a drain, a scrape), `healthzMs`. Needs root, kernel BTF, clang and
 * the test control plane's binaries (built by make); set RETINA_K8S_*_PORT to keep off others' ports.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { collectionPath, objectPath, resources, type MetricsConfiguration } from '../../src/k8s/index.js';
import { AGENT_BIN, AgentProcess, agentEnv } from '../../test/e2e/agent-process.js';
import { cpuSeconds, rssSplit } from '../../test/e2e/proc-stats.js';
import { requireKernel, sleep, stopAll } from '../../test/ebpf/netns.js';
import { createNamespace, deleteNamespace, eventually, listAll, startCluster } from '../../test/integration/harness.js';
import { startOperator, uniqueId } from '../../test/integration/operator-helpers.js';
import { PodNode, createRunningPod, createUnmanagedNode, metricsConfiguration, output } from '../datapath/pods.js';
import { summarize } from '../server/summary.js';
import { trend } from './trend.js';

function envNumber(name: string, def: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(v)}`);
  return n;
}

const MINUTES = envNumber('SOAK_MINUTES', 30);
const WARMUP_MINUTES = envNumber('SOAK_WARMUP_MINUTES', Math.min(5, MINUTES / 5));
const COOLDOWN_S = envNumber('SOAK_COOLDOWN_SECONDS', 60);
const PODS = Math.round(envNumber('SOAK_PODS', 100));
const PPS = Math.round(envNumber('SOAK_PPS', 50_000));
const CHURN_PER_S = envNumber('SOAK_CHURN_PER_SECOND', 5);
const SETTLE_S = 45;
const SCRAPE_EVERY_MS = Math.round(envNumber('SOAK_SCRAPE_EVERY_MS', 10_000));
const PROBE_EVERY_MS = 100;
const AGENT = process.env['SOAK_AGENT'] || AGENT_BIN;
const MC_EVERY_MS = 60_000;
/**
 * MetricsConfiguration switches are sent half a scrape period after a scrape: sent at the same moment
 * as a scrape (the first runs of this soak), every sixth scrape met the burst of the switch on this
 * machine's 2 cores (the soak's API server, etcd and operator writing and validating it), which no
 * agent on a real node shares its CPU with.
 */
const MC_PHASE_MS = SCRAPE_EVERY_MS / 2;
const RSS_EVERY_MS = 2_000;
const PORT = 9997;
const ADV = 'networkobservability_adv_';
/** What Prometheus 2.x sends. */
const PROM_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const GOALS = { rssSlopeMBPer10Min: 1, heapSlopeMBPer10Min: 1, eventLoopLagP99Ms: 100, lostEvents: 0, seriesBackToBaseline: true, scrapeP99Ms: 50, agentAlive: true };
/** The two label sets the MetricsConfiguration alternates between (A is the baseline's). */
const LABELS_A = { src: ['ip', 'namespace', 'podname', 'workload'], dst: ['ip', 'namespace', 'podname', 'workload'] };
const LABELS_B = { src: ['namespace', 'podname'], dst: ['ip'] };

/** Sum of every series of `name` in Prometheus text. */
function sum(text: string, name: string): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/**
 * One scrape as Prometheus makes it: from another process. The duration is curl's own (`time_total`:
 * connect to the last byte), so it is the agent's answer time and not this process's, whose event loop
 * also runs the operator, the churn's API calls and the probes (measured in this process, a scrape
 * also waited for those).
 */
function curlScrape(port: number): Promise<{ text: string; ms: number; status: number }> {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-sS', '--max-time', '10', '-H', `Accept: ${PROM_ACCEPT}`, '-w', '%{stderr}%{time_total} %{http_code}', `http://127.0.0.1:${port}/metrics`],
      { maxBuffer: 64 * 2 ** 20, encoding: 'utf8' }, (err, stdout, stderr) => {
        if (err) return reject(new Error(`curl: ${err.message} ${stderr}`));
        const [total, code] = stderr.trim().split(' ');
        const ms = Number(total) * 1000;
        if (!Number.isFinite(ms)) return reject(new Error(`curl's -w output not understood: ${JSON.stringify(stderr)}`));
        resolve({ text: stdout, ms, status: Number(code) });
      });
  });
}

interface Scrape {
  readonly tMs: number;
  /** To the last byte, measured by the scraping process itself (curl's time_total). */
  readonly ms: number;
  /** Until curl exited, as the soak's own process saw it (spawn and this process's event loop included). */
  readonly soakSideMs: number;
  readonly series: number;
  readonly advSeries: number;
  readonly heapMB: number;
  readonly heapTotalMB: number;
  /** nodejs_heap_space_size_total_bytes by space, MB. */
  readonly spacesMB: Record<string, number>;
  readonly externalMB: number;
  readonly lagP99Ms: number;
  readonly lagMs: number;
  readonly lost: number;
  readonly lostByType: Record<string, number>;
  readonly parsed: number;
  /** Series by family (histogram and summary parts under their own names). */
  readonly families: Map<string, number>;
}

requireKernel();
const loadStart = loadavg().map((x) => Number(x.toFixed(2)));
const t0 = performance.now();
const NODE = uniqueId('soak-node');
const dir = mkdtempSync(join(tmpdir(), 'soak-'));
await using cluster = await startCluster();
const { client } = cluster;
// One MetricsConfiguration is honoured cluster-wide: leftovers of other runs would win.
for (const m of await listAll<MetricsConfiguration>(client, resources.metricsConfigurations)) {
  await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, m.metadata.name)).catch(() => undefined);
}
const ns = uniqueId('soak');
await createNamespace(client, ns);
using node = new PodNode(PODS, { tag: `sk${process.pid % 1000}`, net: '10.239' });
const mc = uniqueId('soak');
const helpers: ChildProcess[] = [];
let agent: AgentProcess | undefined;
try {
  await createUnmanagedNode(client, NODE);
  const names = node.pods.map((p) => `web-${p.index}-g0`);
  await Promise.all(node.pods.map((p) => createRunningPod(client, ns, names[p.index] as string, NODE, p.ip)));
  await using operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('soak') });
  await eventually('operator leading', 30_000, () => operator.op.isLeader() && operator.op.synced());
  await client.request('POST', collectionPath(resources.metricsConfigurations), { body: metricsConfiguration(mc, ns, LABELS_A.src, LABELS_A.dst) });
  const accepted = async (): Promise<boolean> => (await client.request<MetricsConfiguration>('GET', objectPath(resources.metricsConfigurations, undefined, mc))).status?.state === 'Accepted';
  await eventually('MetricsConfiguration accepted', 30_000, accepted);

  const config = join(dir, 'config.yaml');
  const plugins = ['packetforward', 'dropreason', 'linuxutil', 'dns', 'packetparser'];
  writeFileSync(config, `apiServer:\n  host: 127.0.0.1\n  port: 0\nenablePodLevel: true\nremoteContext: false\nenabledPlugin: [${plugins.join(', ')}]\npacketParserHostInterfaces: []\npacketForwardInterfaces: [lo]\nmetricsIntervalDuration: 10s\ndataAggregationLevel: low\n`);
  agent = new AgentProcess({ command: [AGENT], args: ['--config', config, '--kubeconfig', cluster.kubeconfig], env: agentEnv({ NODE_NAME: NODE }) });
  const a = agent;
  const port = await a.listening(30_000);
  for (const p of plugins) await a.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === p, `plugin ${p} started`, 60_000);
  const setupS = (performance.now() - t0) / 1000;

  // Load for the whole run: settling, the soak, the cool-down.
  const loadSeconds = Math.ceil(SETTLE_S + MINUTES * 60 + COOLDOWN_S + 5);
  const sink = await node.sink(loadSeconds + 3, PORT);
  helpers.push(sink);
  const sender = node.send(loadSeconds, PPS, 64, PORT);
  helpers.push(sender);
  const sent = output(sender);
  const received = output(sink);
  const loadT0 = performance.now();
  const soakT0 = loadT0 + SETTLE_S * 1000;
  const soakEnd = soakT0 + MINUTES * 60_000;
  const coolEnd = soakEnd + COOLDOWN_S * 1000;

  const scrapes: Scrape[] = [];
  let scrapeErrors = 0;
  let lastScrapeError = '';
  const scrape = async (): Promise<Scrape | undefined> => {
    const s0 = performance.now();
    try {
      const { text, ms, status } = await curlScrape(port);
      const soakSideMs = performance.now() - s0;
      if (status !== 200) throw new Error(`status ${status}`);
      let series = 0;
      let advSeries = 0;
      const families = new Map<string, number>();
      for (const l of text.split('\n')) {
        if (l === '' || l.startsWith('#')) continue;
        series++;
        if (l.startsWith(ADV)) advSeries++;
        const f = /^[^{ ]+/.exec(l)?.[0] ?? '';
        families.set(f, (families.get(f) ?? 0) + 1);
      }
      return {
        tMs: s0 - soakT0, ms, soakSideMs, series, advSeries,
        heapMB: sum(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
        heapTotalMB: sum(text, 'nodejs_heap_size_total_bytes') / 2 ** 20,
        spacesMB: Object.fromEntries(text.split('\n').filter((l) => l.startsWith('nodejs_heap_space_size_total_bytes{')).map((l) => [/space="([^"]*)"/.exec(l)?.[1] ?? '', Number((Number(l.slice(l.lastIndexOf(' ') + 1)) / 2 ** 20).toFixed(2))])),
        externalMB: sum(text, 'nodejs_external_memory_bytes') / 2 ** 20,
        lagP99Ms: sum(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
        lagMs: sum(text, 'nodejs_eventloop_lag_seconds') * 1000,
        lost: sum(text, 'controlplane_networkobservability_lost_events_counter'),
        lostByType: Object.fromEntries(text.split('\n').filter((l) => l.startsWith('controlplane_networkobservability_lost_events_counter{')).map((l) => [/\{(.*)\}/.exec(l)?.[1] ?? '', Number(l.slice(l.lastIndexOf(' ') + 1))])),
        parsed: sum(text, 'controlplane_networkobservability_parsed_packets_counter'),
        families,
      };
    } catch (e) {
      scrapeErrors++;
      lastScrapeError = String(e);
      return undefined;
    }
  };

  // Settling: the agent labels the pods' traffic, then the baseline.
  await eventually('the agent labels pod traffic', SETTLE_S * 1000, async () => {
    const r = await fetch(`http://127.0.0.1:${port}/metrics`);
    return (await r.text()).includes(`podname="${names[0] as string}"`);
  }, 500);
  // Flows seen before the agent knew the pods made series without pod labels: the label sets are
  // switched once and back (a new spec starts from no series), so the baseline holds what the
  // running pods make, as the cool-down's count will.
  const patchLabels = (l: typeof LABELS_A): Promise<unknown> => client.request('PATCH', objectPath(resources.metricsConfigurations, undefined, mc), {
    contentType: 'application/merge-patch+json', body: { spec: metricsConfiguration(mc, ns, l.src, l.dst).spec },
  });
  const appliedLines = (): number => a.logLines().filter((l) => l.msg === 'advanced metrics spec applied').length;
  for (const l of [LABELS_B, LABELS_A]) {
    const n = appliedLines();
    await patchLabels(l);
    await eventually('the agent applies the label change', 30_000, () => appliedLines() > n, 200);
  }
  await sleep(soakT0 - SCRAPE_EVERY_MS / 2 - performance.now());
  const baseline = await scrape();
  if (!baseline) throw new Error(`baseline scrape failed: ${lastScrapeError}`);
  await sleep(soakT0 - performance.now());

  const rss: [number, number][] = [];
  const anon: [number, number][] = [];
  const rssLoop = async (): Promise<void> => {
    for (let next = performance.now(); performance.now() < coolEnd && a.exit === undefined; next += RSS_EVERY_MS) {
      try {
        const r = rssSplit(a.pid);
        rss.push([performance.now() - soakT0, r.rssMB]);
        anon.push([performance.now() - soakT0, r.anonMB]);
      } catch {
        break; // the agent is gone
      }
      await sleep(next + RSS_EVERY_MS - performance.now());
    }
  };
  const scrapeLoop = async (): Promise<void> => {
    for (let next = performance.now(); performance.now() < coolEnd; next += SCRAPE_EVERY_MS) {
      const s = await scrape();
      if (s) scrapes.push(s);
      await sleep(next + SCRAPE_EVERY_MS - performance.now());
    }
  };
  const probes: number[] = [];
  const probeLoop = async (): Promise<void> => {
    for (let next = performance.now(); performance.now() < soakEnd && a.exit === undefined; next += PROBE_EVERY_MS) {
      const p0 = performance.now();
      try {
        const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(10_000) });
        await r.arrayBuffer();
        probes.push(performance.now() - p0);
      } catch {
        probes.push(performance.now() - p0);
      }
      await sleep(next + PROBE_EVERY_MS - performance.now());
    }
  };
  let replaced = 0;
  let churnErrors = 0;
  let lastChurnError = '';
  // Replacements start on schedule, up to CHURN_IN_FLIGHT at once (a slow API server must not slow
  // the rate); each pod slot is replaced by one replacement at a time.
  const CHURN_IN_FLIGHT = 8;
  const replace = async (p: (typeof node.pods)[number], gen: number): Promise<void> => {
    const old = names[p.index] as string;
    const name = `web-${p.index}-g${gen}`;
    try {
      // The new pod first: the cache keeps the address on the newer pod, so the flows stay labelled.
      await createRunningPod(client, ns, name, NODE, p.ip);
      names[p.index] = name;
      await client.request('DELETE', objectPath(resources.pods, ns, old), { body: { gracePeriodSeconds: 0 } });
      replaced++;
    } catch (e) {
      churnErrors++;
      lastChurnError = String(e);
    }
  };
  let churnSkipped = 0;
  const churnLoop = async (): Promise<void> => {
    const busy = new Map<number, Promise<void>>();
    for (let i = 0, next = performance.now(); performance.now() < soakEnd; i++) {
      const p = node.pods[i % PODS] as (typeof node.pods)[number];
      if (busy.size >= CHURN_IN_FLIGHT || busy.has(p.index)) churnSkipped++;
      else busy.set(p.index, replace(p, Math.floor(i / PODS) + 1).finally(() => busy.delete(p.index)));
      next += 1000 / CHURN_PER_S;
      await sleep(next - performance.now());
    }
    await Promise.all(busy.values());
  };
  let mcChanges = 0;
  let mcErrors = 0;
  /** When each MetricsConfiguration switch was sent (ms from the soak's start): scrapes are told apart by it. */
  const mcSentMs: number[] = [];
  const setLabels = async (l: typeof LABELS_A): Promise<void> => {
    try {
      mcSentMs.push(performance.now() - soakT0);
      await patchLabels(l);
      mcChanges++;
    } catch {
      mcErrors++;
    }
  };
  const mcLoop = async (): Promise<void> => {
    let b = false;
    for (let next = performance.now() + MC_EVERY_MS + MC_PHASE_MS; next < soakEnd; next += MC_EVERY_MS) {
      await sleep(next - performance.now());
      b = !b;
      await setLabels(b ? LABELS_B : LABELS_A);
    }
    // The cool-down runs with the baseline's label set.
    await sleep(soakEnd - performance.now());
    if (b) await setLabels(LABELS_A);
  };
  // The agent's CPU (user + system, all threads) over the soak's minutes, cool-down excluded.
  const cpu0 = cpuSeconds(a.pid);
  let cpuSoak = NaN;
  const cpuLoop = async (): Promise<void> => {
    await sleep(soakEnd - performance.now());
    if (a.exit === undefined) cpuSoak = cpuSeconds(a.pid) - cpu0;
  };
  const applied0 = appliedLines();
  await Promise.all([rssLoop(), scrapeLoop(), churnLoop(), mcLoop(), probeLoop(), cpuLoop()]);
  const applied = appliedLines() - applied0;
  const orNaN = (v: number[]): number[] => (v.length ? v : [NaN]);
  const nearSwitch = (tMs: number): boolean => mcSentMs.some((m) => tMs >= m && tMs - m < SCRAPE_EVERY_MS);
  const alive = a.exit === undefined;
  const sentPackets = Number(/sent (\d+)/.exec(await sent.catch((e: unknown) => String(e)))?.[1] ?? 0);
  const receivedPackets = Number(/received (\d+)/.exec(await received.catch((e: unknown) => String(e)))?.[1] ?? 0);

  // Figures.
  const everyMinute = (r: [number, number][], an: [number, number][], sc: { tMs: number; heapMB: number }[]): { rss: number[]; anon: number[]; heapUsed: number[] } => {
    const at = <T>(xs: T[], t: (x: T) => number, m: number): T | undefined => xs.find((x) => t(x) >= m * 60_000);
    const minutes = Array.from({ length: Math.floor((soakEnd - soakT0) / 60_000) + 1 }, (_, m) => m);
    return {
      rss: minutes.map((m) => at(r, ([t]) => t, m)?.[1] ?? NaN),
      anon: minutes.map((m) => at(an, ([t]) => t, m)?.[1] ?? NaN),
      heapUsed: minutes.map((m) => Number((at(sc, (s) => s.tMs, m)?.heapMB ?? NaN).toFixed(1))),
    };
  };
  const warm = WARMUP_MINUTES * 60_000;
  const inSoak = (t: number): boolean => t >= warm && t <= soakEnd - soakT0;
  const per10 = (x: number): number => Number((x * 10).toFixed(3));
  const rssTrend = trend(rss.filter(([t]) => inSoak(t)));
  const anonTrend = trend(anon.filter(([t]) => inSoak(t)));
  const soakScrapes = scrapes.filter((s) => inSoak(s.tMs));
  const heapTotalTrend = trend(soakScrapes.map((s) => [s.tMs, s.heapTotalMB] as [number, number]));
  const externalTrend = trend(soakScrapes.map((s) => [s.tMs, s.externalMB] as [number, number]));
  const heapTrend = trend(scrapes.filter((s) => inSoak(s.tMs)).map((s) => [s.tMs, s.heapMB] as [number, number]));
  const during = scrapes.filter((s) => s.tMs <= soakEnd - soakT0);
  const last = scrapes[scrapes.length - 1];
  const lag = summarize(scrapes.map((s) => s.lagP99Ms), 1);
  const scrapeMs = summarize(scrapes.map((s) => s.ms), 1);
  const lost = (last?.lost ?? NaN) - baseline.lost;
  const finalSeries = last?.advSeries ?? NaN;
  const figures = {
    rssSlopeMBPer10Min: per10(rssTrend.slopePerMinute), rssSlopeStdErrMBPer10Min: per10(rssTrend.stdErrPerMinute),
    heapSlopeMBPer10Min: per10(heapTrend.slopePerMinute), heapSlopeStdErrMBPer10Min: per10(heapTrend.stdErrPerMinute),
    anonRssSlopeMBPer10Min: per10(anonTrend.slopePerMinute), heapTotalSlopeMBPer10Min: per10(heapTotalTrend.slopePerMinute), externalSlopeMBPer10Min: per10(externalTrend.slopePerMinute),
    rssMB: { afterWarmup: rss.find(([t]) => t >= warm)?.[1], end: rss[rss.length - 1]?.[1], max: Math.max(...rss.map(([, y]) => y)) },
    heapMB: summarize(scrapes.map((s) => s.heapMB), 1),
    /** RSS, its anonymous part and V8's heap used each minute of the soak (MB), for the curve behind the slopes. */
    everyMinuteMB: everyMinute(rss, anon, scrapes),
    heapSpacesTotalMB: { afterWarmup: soakScrapes[0]?.spacesMB, endOfSoak: soakScrapes[soakScrapes.length - 1]?.spacesMB },
    eventLoopLagP99Ms: lag.p99, eventLoopLagMs: { ofEachScrapesP99: lag, atScrape: summarize(scrapes.map((s) => s.lagMs), 1) },
    agentCpuPercentOfACore: Number((cpuSoak / (MINUTES * 60) * 100).toFixed(2)),
    lostEvents: lost, lostEventsAtEnd: last?.lostByType,
    advSeries: {
      baseline: baseline.advSeries, peakDuringChurn: Math.max(...during.map((s) => s.advSeries)), final: finalSeries,
      perMinute: scrapes.filter((_, i) => i % Math.max(1, Math.round(60_000 / SCRAPE_EVERY_MS)) === Math.max(1, Math.round(60_000 / SCRAPE_EVERY_MS)) - 1).map((s) => [Number((s.tMs / 60_000).toFixed(1)), s.advSeries]),
    },
    allSeries: { baseline: baseline.series, final: last?.series, largestFamiliesAtEnd: Object.fromEntries([...(last?.families ?? [])].sort((x, y) => y[1] - x[1]).slice(0, 5)) },
    scrapeMs,
    scrapeMsSoakSide: summarize(scrapes.map((s) => s.soakSideMs), 1),
    // The first scrape after a MetricsConfiguration switch was sent meets the agent's new spec (applied after
    // a 1 s debounce, series rebuilt); the others meet only traffic and churn. The slowest ten, with when.
    scrapeMsBySwitch: {
      nearSwitch: summarize(orNaN(scrapes.filter((x) => nearSwitch(x.tMs)).map((x) => x.ms)), 1),
      other: summarize(orNaN(scrapes.filter((x) => !nearSwitch(x.tMs)).map((x) => x.ms)), 1),
    },
    slowestScrapes: [...scrapes].sort((x, y) => y.ms - x.ms).slice(0, 10).map((x) => ({ tS: Number((x.tMs / 1000).toFixed(1)), ms: Number(x.ms.toFixed(1)), nearSwitch: nearSwitch(x.tMs) })),
    healthzMs: summarize(probes.length ? probes : [NaN], 1), scrapes: scrapes.length, scrapeErrors, ...(scrapeErrors ? { lastScrapeError } : {}),
    podsReplaced: replaced, podsReplacedPerSecond: Number((replaced / (MINUTES * 60)).toFixed(2)), churnErrors, churnSkippedBusy: churnSkipped, ...(churnErrors ? { lastChurnError } : {}),
    metricsConfigurationChanges: mcChanges, metricsConfigurationErrors: mcErrors, specsAppliedByAgent: applied,
    packetsSent: sentPackets, packetsReceived: receivedPackets, packetsPerSecond: Math.round(sentPackets / loadSeconds),
    recordsParsed: (last?.parsed ?? 0) - baseline.parsed,
  };
  const pass = {
    rssSlopeMBPer10Min: figures.rssSlopeMBPer10Min < GOALS.rssSlopeMBPer10Min,
    heapSlopeMBPer10Min: figures.heapSlopeMBPer10Min < GOALS.heapSlopeMBPer10Min,
    eventLoopLagP99Ms: lag.p99 < GOALS.eventLoopLagP99Ms,
    lostEvents: lost === GOALS.lostEvents,
    seriesBackToBaseline: finalSeries === baseline.advSeries,
    scrapeP99Ms: scrapeMs.p99 < GOALS.scrapeP99Ms,
    agentAlive: alive,
  };
  const ok = Object.values(pass).every(Boolean);
  console.log(JSON.stringify({
    name: 'soak', ok, pass, goals: GOALS, ...figures,
    conditions: {
      minutes: MINUTES, warmupMinutes: WARMUP_MINUTES, cooldownSeconds: COOLDOWN_S, settleSeconds: SETTLE_S, setupSeconds: Math.round(setupS),
      agent: AGENT, pods: PODS, packetsPerSecondAsked: PPS, churnPerSecond: CHURN_PER_S, scrapeEverySeconds: SCRAPE_EVERY_MS / 1000, metricsConfigurationEverySeconds: MC_EVERY_MS / 1000,
      config: 'enablePodLevel, local context, dataAggregationLevel low, metricsIntervalDuration 10s, packetforward dropreason linuxutil dns packetparser',
      kernel: release(), cpus: cpus().length, loadavgAtStart: loadStart, loadavgAtEnd: loadavg().map((x) => Number(x.toFixed(2))),
    },
  }));
  if (!ok) process.exitCode = 1;
} finally {
  await stopAll(helpers);
  await agent?.[Symbol.asyncDispose]();
  rmSync(dir, { recursive: true, force: true });
  await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, mc)).catch(() => undefined);
  await deleteNamespace(client, ns);
  await client.request('DELETE', objectPath(resources.nodes, undefined, NODE)).catch(() => undefined);
}
