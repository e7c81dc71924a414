/**
 * Pod churn under flow load, through the agent's real pod-level parts: pods arrive in the IP cache
 * and the pod informer as the agent's watch feeds them, flows are enriched from the cache
 * (`cacheLookup`) into the Metrics Module, and pod deletes reach the module through
 * `startPodForgetter` (its default 250 ms batch, in steps of 1 000 series). 5 000 pods are created
 * and deleted while flows run, with a spec whose metrics cover the context label sets (with pod
 * identity and without), in remote and local context. Afterwards every family has exactly its baseline series, nothing
 * folded into overflow, and the event loop's delay stayed bounded (measured with
 * `monitorEventLoopDelay`).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { PodEndpoint } from '../../src/cache/index.js';
import { startPodForgetter } from '../../src/pipeline/pod-level-forget.js';
import { cacheLookup, createEnricher } from '../../src/enricher/index.js';
import { createFlow, type Flow } from '../../src/flow/index.js';
import { silentLogger } from '../../src/log/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import { createMetricsModule, type GonePods } from '../../src/metrics/module/index.js';
import { fakePodWatch } from '../fakes/informer.js';
import { specOf } from '../fakes/metrics-spec.js';

const PODS = 5000;
const PER_TICK = 10;
const ALIVE = 100;
/** Fewer addresses than pods: a new pod often gets an IP whose deleted owner is still queued. */
const IP_POOL = 300;
/** Above what live and queued pods need, below what 5 000 pods would leave without removal. */
const MAX_SERIES = 8000;
/** The pod forgetter's step: below the series the live pods alone hold in one family (see below). */
const STEP_SERIES = 100;

/** Each metric a different label set; in remote context sources and destinations differ too. */
const SPEC = {
  contextOptions: [
    { metricName: 'forward_count', sourceLabels: ['podname'], destinationLabels: ['ip'] },
    { metricName: 'forward_bytes', sourceLabels: ['namespace', 'podname'], destinationLabels: ['ip', 'port'] },
    { metricName: 'tcp_flag_gauges', sourceLabels: ['ip', 'namespace', 'podname', 'workload'], destinationLabels: ['podname', 'service', 'zone'] },
    { metricName: 'drop_count', sourceLabels: ['ip'], destinationLabels: ['namespace', 'podname'] },
    { metricName: 'drop_bytes', sourceLabels: ['workload'], destinationLabels: ['namespace'] },
    { metricName: 'dns_request_count', sourceLabels: ['podname', 'ip'], destinationLabels: ['service', 'zone', 'port'] },
    { metricName: 'dns_response_count', sourceLabels: ['port'], destinationLabels: ['podname'] },
    { metricName: 'tcp_retransmission_count', sourceLabels: ['zone', 'service'], destinationLabels: ['workload', 'ip'] },
  ],
  namespaces: { exclude: [] },
};

const podOf = (namespace: string, name: string, ips: string[], workload: string): PodEndpoint => ({
  kind: 'pod', namespace, name, ips, nodeIP: undefined, nodeName: 'node-1', labels: {}, annotations: {}, owners: [], workloads: [{ kind: 'Deployment', name: workload }],
});

/** The flows one client pod and one server exchange: TCP both ways (v4 and v6), a drop, DNS, a retransmission. */
function exchange(c: PodEndpoint, s: PodEndpoint): Flow[] {
  const [c4, c6] = c.ips as [string, string];
  const [s4, s6] = s.ips as [string, string];
  const tcp = { verdict: 'FORWARDED' as const, proto: 6, packets: 2, bytes: 200, tcpFlags: 0x18 };
  return [
    createFlow({ ...tcp, srcIp: c4, dstIp: s4, srcPort: 40000, dstPort: 80, direction: 'EGRESS' }),
    createFlow({ ...tcp, srcIp: s4, dstIp: c4, srcPort: 80, dstPort: 40000, direction: 'INGRESS' }),
    createFlow({ ...tcp, srcIp: c6, dstIp: s6, srcPort: 40000, dstPort: 80, direction: 'EGRESS' }),
    createFlow({ verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 6, packets: 1, bytes: 60, srcIp: s4, dstIp: c4, srcPort: 80, dstPort: 40000, direction: 'INGRESS' }),
    createFlow({ verdict: 'DNS', proto: 17, srcIp: c4, dstIp: s4, srcPort: 5353, dstPort: 53, dns: { isResponse: false, query: 'svc.', qtype: 'A', rcode: '', answers: [], numAnswers: 0 } }),
    createFlow({ verdict: 'DNS', proto: 17, srcIp: s4, dstIp: c4, srcPort: 53, dstPort: 5353, dns: { isResponse: true, query: 'svc.', qtype: 'A', rcode: 'NOERROR', answers: ['10.0.0.1'], numAnswers: 1 } }),
    createFlow({ verdict: 'RETRANSMISSION', proto: 6, packets: 1, bytes: 60, srcIp: c4, dstIp: s4, srcPort: 40000, dstPort: 80, direction: 'EGRESS' }),
  ];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function churn(remoteContext: boolean) {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const module = createMetricsModule({ metrics, remoteContext, nodeName: 'node-1', maxSeriesPerMetric: MAX_SERIES });
  module.apply(specOf(SPEC));
  const { pods: informer, cache, add, del } = fakePodWatch();
  /** Each pass: pods, and the longest step in CPU and wall time (ms). */
  const passes: { pods: number; steps: number; maxStepCpuMs: number; maxStepMs: number }[] = [];
  const timed = {
    *forgetPodsInSteps(g: GonePods, step: number): Generator<void, number, void> {
      const job = module.forgetPodsInSteps(g, step);
      const p = { pods: g.pods.length, steps: 0, maxStepCpuMs: 0, maxStepMs: 0 };
      passes.push(p);
      for (;;) {
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        const r = job.next();
        p.steps++;
        p.maxStepCpuMs = Math.max(p.maxStepCpuMs, process.cpuUsage(c0).user / 1000);
        p.maxStepMs = Math.max(p.maxStepMs, performance.now() - t0);
        if (r.done) return r.value;
        yield;
      }
    },
  };
  // Steps of 100 series (default 4 096), so that flows run between the steps of a pass here too. A step
  // counts the series a family holds, gone or not, and forward_count holds two or more for each of the
  // 100 live pods at every pass: every pass runs in steps, at any speed of the machine (with 1 000, only
  // passes that met more than 1 000 series in one family did, and how many pods' deletes a pass holds
  // depends on how fast this loop runs: a slow full make test once saw none).
  const forgetter = startPodForgetter({ pods: informer, cache, module: timed, log: silentLogger, graceMs: 1000, stepSeries: STEP_SERIES });
  const pipeline = createEnricher(cacheLookup(cache), module);
  const servers = Array.from({ length: 10 }, (_, i) => podOf('stable', `server-${i}`, [`10.0.0.${i + 1}`, `fd00::${i + 1}`], 'server'));
  const seed = podOf('churn', 'seed', ['10.9.255.1', 'fd00:9::1'], 'churner');
  for (const p of [...servers, seed]) add(p);
  /** One round of traffic, handed on as ring drains do: batches of at most 512 flows, each its own task. */
  const load = async (clients: readonly PodEndpoint[]): Promise<void> => {
    const flows: Flow[] = [];
    for (let i = 0; i < clients.length; i++) flows.push(...exchange(clients[i] as PodEndpoint, servers[i % servers.length] as PodEndpoint));
    // Background traffic of the long-lived pods.
    for (let k = 0; k < 20; k++) for (const s of servers) flows.push(...exchange(seed, s));
    for (let i = 0; i < flows.length; i += 512) {
      pipeline.consume({ source: 'churn', flows: flows.slice(i, i + 512) });
      await new Promise((r) => setImmediate(r));
    }
  };
  const seriesCounts = async (): Promise<Map<string, number>> => {
    const out = new Map<string, number>();
    for (const l of (await metrics.expose()).body.split('\n')) {
      const m = /^networkobservability_(adv_\w+)\{/.exec(l);
      if (m) out.set(m[1] as string, (out.get(m[1] as string) ?? 0) + 1);
    }
    return out;
  };
  await load([seed]);
  const baseline = await seriesCounts();

  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const alive: PodEndpoint[] = [];
  let peak = 0;
  const t0 = performance.now();
  for (let i = 0; i < PODS; ) {
    for (let k = 0; k < PER_TICK; k++, i++) {
      const slot = i % IP_POOL;
      const p = podOf('churn', `c-${i}`, [`10.9.${slot >> 8}.${slot & 255}`, `fd00:9::${(slot + 2).toString(16)}`], 'churner');
      alive.push(p);
      add(p);
    }
    await load(alive);
    while (alive.length > ALIVE) {
      const p = alive.shift() as PodEndpoint;
      del(p.namespace, p.name);
    }
    if (i % (25 * PER_TICK) === 0) peak = Math.max(peak, ...(await seriesCounts()).values());
    await sleep(2);
  }
  for (const p of alive.splice(0)) del(p.namespace, p.name);
  const churnMs = performance.now() - t0;
  await load([]);
  await sleep(1400); // the last batch (250 ms) and its grace pass (1 s)
  lag.disable();
  forgetter[Symbol.dispose]();
  const after = await seriesCounts();
  const overflow = (await metrics.expose()).body.split('\n').filter((l) => l.includes('series_overflow_total{'));
  module[Symbol.dispose]();
  return {
    baseline, after, overflow, passes, peak, churnMs,
    lagMs: { p50: lag.percentile(50) / 1e6, p99: lag.percentile(99) / 1e6, max: lag.max / 1e6 },
  };
}

describe('pod churn: deleted pods\' series go, in batches, off the flow path', () => {
  for (const remote of [true, false]) {
    it(`${PODS} pods created and deleted under flow load, ${remote ? 'remote' : 'local'} context`, async () => {
      const r = await churn(remote);
      const maxStepCpu = Math.max(...r.passes.map((p) => p.maxStepCpuMs));
      const maxStep = Math.max(...r.passes.map((p) => p.maxStepMs));
      console.log(JSON.stringify({
        context: remote ? 'remote' : 'local', churnMs: Math.round(r.churnMs), peakSeries: r.peak, passes: r.passes.length,
        steps: r.passes.reduce((n, p) => n + p.steps, 0), maxStepCpuMs: +maxStepCpu.toFixed(2), maxStepMs: +maxStep.toFixed(2),
        lagMs: { p50: +r.lagMs.p50.toFixed(1), p99: +r.lagMs.p99.toFixed(1), max: +r.lagMs.max.toFixed(1) },
      }));
      assert.deepEqual(Object.fromEntries(r.after), Object.fromEntries(r.baseline), 'every family is back to its baseline series');
      assert.ok(r.baseline.size >= 7, 'the spec\'s families all have series');
      assert.ok(r.peak > Math.max(...r.baseline.values()), 'churned pods had series of their own');
      assert.deepEqual(r.overflow, [], 'no flow folded into overflow');
      assert.ok(r.passes.length < PODS / PER_TICK / 4, `deletes removed in batches (${r.passes.length} passes for ${PODS} pods)`);
      const stepped = r.passes.filter((p) => p.steps > 1).length;
      assert.ok(stepped >= r.passes.length / 2, `passes ran in steps (${stepped} of ${r.passes.length})`);
      // CPU time: the machine running the tests is shared, so wall times vary with its load. The event-loop
      // delay is printed above, not asserted: it counts the time other processes held the cores (a full
      // make test once read p99 115 ms at load 9 with every step under this CPU bound).
      assert.ok(maxStepCpu < 50, `one step of a pass took ${maxStepCpu.toFixed(1)} ms of CPU`);
    });
  }
});
