/**
 * Pod-level pipeline throughput on one core: decode → enrich → aggregate, each stage combination
 * side by side in one run (the machine is noisy: compare within a run; each figure is the median of
 * several interleaved rounds). Records are what this node's plugins read (fixture.ts): packetparser
 * packet_event records decoded by createPacketDecoder, dropreason and tcpretrans records through
 * their flow decoders, DNS records into flows; enrichment goes through cacheLookup over an IpCache of
 * pods, services and nodes; aggregation is the Metrics Module with Retina's annotation-mode set
 * (8 metrics, ip/namespace/podname/workload on both sides) in remote and local context. The Hubble
 * metrics (hubble.metrics.enabled, Cilium's set for its dashboards) as the pipeline's consumer alone
 * and beside the Metrics Module (fanOut), as the agent runs them.
 * Prints one JSON line (and a table on stderr). BENCH_ROUNDS, BENCH_ROUND_MS tune the run; BENCH_ONLY=<name> runs one combination (for --cpu-prof).
 */
import { cacheLookup, createEnricher } from '../../src/enricher/index.js';
import { fanOut, type Flow, type FlowConsumer } from '../../src/flow/index.js';
import { parseHubbleMetrics } from '../../src/config/index.js';
import { createHubbleMetrics } from '../../src/metrics/hubble/index.js';
import { discardFlows } from '../../test/fakes/flows.js';
import { createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import { annotationSpec, createMetricsModule, type MetricsModule, type MetricsSpec } from '../../src/metrics/module/index.js';
import { createPacketDecoder } from '../../src/plugins/linux/packetparser/decode.js';
import { createDropDecoder, reasonNames, DROP_EVENT_SIZE } from '../../src/plugins/linux/dropreason/decode.js';
import { createRetransDecoder, RETRANS_EVENT_SIZE } from '../../src/plugins/linux/tcpretrans/decode.js';
import { kernelClock } from '../../src/plugins/linux/ebpf-shared/clock.js';
import { dnsFlow } from '../../src/plugins/linux/dns/decode.js';
import { PACKET_EVENT_SIZE } from '../../src/plugins/linux/packetparser/decode.js';
import { buildFixture, THIS_NODE, type Fixture, type Rec } from './fixture.js';
import { specOf } from '../../test/fakes/metrics-spec.js';

const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const ROUNDS = envNum('BENCH_ROUNDS', 5);
const ROUND_MS = envNum('BENCH_ROUND_MS', 400);
const BATCH = 256;
const shape = { nodes: 10, pods: 1000, services: 50, connections: 3000, records: 64 * 1024, forwardShare: 0.65 };

const remoteFx = buildFixture({ ...shape, localOnly: false });
const localFx = buildFixture({ ...shape, localOnly: true });

// Each plugin has its own decoder (and its own address table), as in the agent.
const clock = kernelClock(1.7e12);
const decodePacket = createPacketDecoder({ clock, nodeName: THIS_NODE });
const reasonName = reasonNames(new Map([[2, 'SKB_DROP_REASON_NOT_SPECIFIED'], [5, 'SKB_DROP_REASON_SOCKET_FILTER'], [6, 'SKB_DROP_REASON_UDP_CSUM'], [16, 'SKB_DROP_REASON_NETFILTER_DROP']]));
const decodeDrop = createDropDecoder({ reasonName, clock });
const decodeRetrans = createRetransDecoder({ clock });

function decodeBatch(fx: Fixture, recs: readonly Rec[]): Flow[] {
  const out: Flow[] = [];
  for (let i = 0; i < recs.length; i++) {
    const r = recs[i] as Rec;
    switch (r.kind) {
      case 'pp': out.push(decodePacket(fx.pp, r.off, PACKET_EVENT_SIZE)); break;
      case 'drop': out.push(decodeDrop(fx.drops, r.off, DROP_EVENT_SIZE)); break;
      case 'retrans': out.push(decodeRetrans(fx.retrans, r.off, RETRANS_EVENT_SIZE)); break;
      case 'dns': out.push(dnsFlow(r.rec, clock)); break;
    }
  }
  return out;
}

const batchesOf = (fx: Fixture): Rec[][] => Array.from({ length: Math.ceil(fx.schedule.length / BATCH) }, (_, i) => fx.schedule.slice(i * BATCH, (i + 1) * BATCH));
const annotation = annotationSpec(Array.from({ length: 20 }, (_, i) => `ns-${i}`));
const forwardOnly = specOf({ contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname', 'namespace'], destinationLabels: ['podname', 'namespace'] }], namespaces: { exclude: [] } });

interface Combo {
  readonly name: string;
  /** Handles one batch; returns the flows it handled. */
  readonly step: (i: number) => number;
  readonly metrics: MetricsRegistry | undefined;
  readonly samples: number[];
  heapMB: number;
}

function moduleFor(remote: boolean, spec: MetricsSpec): { module: MetricsModule; metrics: MetricsRegistry } {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const module = createMetricsModule({ metrics, remoteContext: remote, nodeName: THIS_NODE });
  module.apply(spec);
  return { module, metrics };
}

/** Cilium's entries for its Hubble dashboards (docs/hubble.md), workload or address on both sides. */
const CTX = 'sourceContext=workload-name|reserved-identity;destinationContext=workload-name|reserved-identity;labelsContext=source_namespace,destination_namespace';
const HUBBLE_ENTRIES = [`dns:query;${CTX}`, `drop:${CTX}`, `tcp:${CTX}`, `flow:${CTX}`, 'port-distribution', 'flows-to-world:any-drop;port'];

function hubbleFor(): { consumer: FlowConsumer; metrics: MetricsRegistry } {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const consumer = createHubbleMetrics({ metrics: parseHubbleMetrics(HUBBLE_ENTRIES).metrics, registry: metrics, nodeName: THIS_NODE });
  return { consumer, metrics };
}

/** decode → enrich → the Hubble metrics (alone, or beside the Metrics Module). */
function liveHubble(name: string, fx: Fixture, withModule: boolean): Combo {
  const batches = batchesOf(fx);
  const h = hubbleFor();
  const m = withModule ? moduleFor(true, annotation) : undefined;
  const next = createEnricher(cacheLookup(fx.cache), m ? fanOut([m.module, h.consumer]) : h.consumer);
  return { name, metrics: h.metrics, samples: [], heapMB: 0, step: (i) => {
    const flows = decodeBatch(fx, batches[i % batches.length] as Rec[]);
    next.consume({ source: 'bench', flows });
    return flows.length;
  } };
}

/** decode → [enrich → [aggregate]] over live records. */
function live(name: string, fx: Fixture, stages: 'decode' | 'enrich' | 'all', remote = true, spec: MetricsSpec = annotation): Combo {
  const batches = batchesOf(fx);
  const m = stages === 'all' ? moduleFor(remote, spec) : undefined;
  const next: FlowConsumer = stages === 'decode' ? discardFlows : createEnricher(cacheLookup(fx.cache), m?.module ?? discardFlows);
  return { name, metrics: m?.metrics, samples: [], heapMB: 0, step: (i) => {
    const flows = decodeBatch(fx, batches[i % batches.length] as Rec[]);
    next.consume({ source: 'bench', flows });
    return flows.length;
  } };
}

/** aggregate only, over flows decoded and enriched once beforehand. */
function aggregateOnly(name: string, fx: Fixture, remote: boolean): Combo {
  const enrich = createEnricher(cacheLookup(fx.cache), discardFlows);
  const batches = batchesOf(fx).map((b) => {
    // Copies: flows kept alive from the decoders' own allocation site would make V8 pretenure
    // every later Flow (allocate it in old space), which slows every other combination down.
    const flows = decodeBatch(fx, b).map((f) => ({ ...f }));
    enrich.consume({ source: 'bench', flows });
    return flows;
  });
  const { module, metrics } = moduleFor(remote, annotation);
  return { name, metrics, samples: [], heapMB: 0, step: (i) => {
    const flows = batches[i % batches.length] as Flow[];
    module.consume({ source: 'bench', flows });
    return flows.length;
  } };
}

/** The Hubble metrics only, over flows decoded and enriched once beforehand (as aggregateOnly). */
function hubbleOnly(name: string, fx: Fixture): Combo {
  const enrich = createEnricher(cacheLookup(fx.cache), discardFlows);
  const batches = batchesOf(fx).map((b) => {
    const flows = decodeBatch(fx, b).map((f) => ({ ...f }));
    enrich.consume({ source: 'bench', flows });
    return flows;
  });
  const h = hubbleFor();
  return { name, metrics: h.metrics, samples: [], heapMB: 0, step: (i) => {
    const flows = batches[i % batches.length] as Flow[];
    h.consumer.consume({ source: 'bench', flows });
    return flows.length;
  } };
}

const only = process.env['BENCH_ONLY'];
const combos: Combo[] = [
  live('decode', remoteFx, 'decode'),
  live('decode+enrich', remoteFx, 'enrich'),
  live('decode+enrich+aggregate remote annotation-set', remoteFx, 'all', true),
  live('decode+enrich+aggregate local annotation-set', localFx, 'all', false),
  live('decode+enrich+aggregate remote forward-only', remoteFx, 'all', true, forwardOnly),
  aggregateOnly('aggregate remote annotation-set', remoteFx, true),
  aggregateOnly('aggregate local annotation-set', localFx, false),
  hubbleOnly('hubble-metrics (Cilium\'s dashboard set)', remoteFx),
  liveHubble('decode+enrich+hubble-metrics', remoteFx, false),
  liveHubble('decode+enrich+aggregate remote annotation-set+hubble-metrics', remoteFx, true),
].filter((c) => only === undefined || c.name === only);

let cursor = 0;
for (const c of combos) for (let i = 0; i < 2 * batchesOf(remoteFx).length; i++) c.step(cursor++); // warm-up: every connection seen
for (let r = 0; r < ROUNDS; r++) {
  for (const c of combos) {
    globalThis.gc?.();
    const heap0 = process.memoryUsage().heapUsed;
    let flows = 0;
    const t0 = process.hrtime.bigint();
    const end = t0 + BigInt(ROUND_MS * 1e6);
    while (process.hrtime.bigint() < end) for (let k = 0; k < 20; k++) flows += c.step(cursor++);
    const ns = Number(process.hrtime.bigint() - t0);
    c.samples.push(flows / (ns / 1e9));
    c.heapMB = Math.max(c.heapMB, (process.memoryUsage().heapUsed - heap0) / 1048576);
  }
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
async function seriesCount(m: MetricsRegistry | undefined): Promise<number | undefined> {
  if (m === undefined) return undefined;
  return (await m.expose()).body.split('\n').filter((l) => l.startsWith('networkobservability_adv_') || l.startsWith('hubble_')).length;
}
const results = await Promise.all(combos.map(async (c) => {
  const fps = median(c.samples);
  return { name: c.name, flowsPerSec: Math.round(fps), nsPerFlow: +(1e9 / fps).toFixed(1), rounds: c.samples.map(Math.round), heapDeltaMaxMB: +c.heapMB.toFixed(1), series: await seriesCount(c.metrics) };
}));
for (const r of results) process.stderr.write(`${r.name.padEnd(62)} ${(r.flowsPerSec / 1e6).toFixed(2).padStart(6)} M flows/s  ${String(r.nsPerFlow).padStart(7)} ns/flow\n`);
console.log(JSON.stringify({
  bench: 'pipeline/enrich-aggregate', ...shape, thisNodePods: remoteFx.thisNodePods, batch: BATCH, rounds: ROUNDS, roundMs: ROUND_MS,
  mix: 'forward 65% (packetparser, aggregated reports; host interface 1 in 5), drop 14%, dns 12%, retrans 9%',
  goalFlowsPerSec: 1_000_000, node: process.version, results,
}));
