/**
 * The flow-log export's costs in one process (src/export), printed as JSON lines:
 *
 * 1. `export-cost`: ns per flow on the drain, side by side in one run (median of BENCH_ROUNDS rounds
 *    of BENCH_ROUND_MS each, 256-flow batches of enriched flows: 200 pods, 20 namespaces, 10%
 *    DROPPED): `baseline` (making the batch only), `select` (toHubbleFlow and an allow/deny match,
 *    every flow refused), `record` (selected and made a Hubble JSON record, handed to a sink that
 *    keeps nothing), `file` (the real file sink: JSON.stringify and queueing; its writes happen
 *    after, off the drain, and are in figure 2), `aggregate` (folded into the aggregation instead).
 *    The per-flow cost of a stage is its figure minus `baseline`.
 * 2. `export-cpu`: the whole process's CPU (user + system, libuv's writer threads included; one core
 *    = 100 %) while the exporter writes 50 000 flows/s (BENCH_RATE) for BENCH_CPU_S seconds to a real
 *    rotating file (10 MB, 5 backups) in the OS's temp directory, beside the same pacing loop making
 *    the flows without exporting them (`generate`); the export's share is the difference. Every
 *    flow must come out written, none dropped.
 * 3. `export-aggregation`: the volume cut on the soak's traffic (bench/soak: 100 pods, each one UDP
 *    socket, 50 000 packets/s round-robin to one service address and port, packetparser at low
 *    aggregation: one flow per packet, seen leaving the pod, EGRESS) over BENCH_AGG_S simulated
 *    seconds at flowLogs.aggregation.interval 30 s: records out / flows in.
 *
 * Figures (2 vCPU VM shared with 6 other helpers' builds and tests, Node 22, 2026-11-26) are in
 * bench/export/README.md. Run with `node --expose-gc` (make bench does).
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFlow, type Flow } from '../../src/flow/index.js';
import { loadFlowProtos } from '../../src/flow/hubble/index.js';
import { createAggregator, createFileSink, createFlowExporter, sinkCounts, staticSelection, type FlowLogRecord, type FlowLogSink } from '../../src/export/index.js';
import { createLogger } from '../../src/log/index.js';
import { batch, median, paced } from './flows.js';
import { catalog, createMetricsRegistry } from '../../src/metrics/index.js';

const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const ROUNDS = envNum('BENCH_ROUNDS', 5);
const ROUND_MS = envNum('BENCH_ROUND_MS', 300);
const RATE = envNum('BENCH_RATE', 50_000);
const CPU_S = envNum('BENCH_CPU_S', 5);
const AGG_S = envNum('BENCH_AGG_S', 120);
const BATCH = 256;

const protos = loadFlowProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
const log = createLogger({ level: 'error', stream: new PassThrough() });

const nullSink = (metrics: ReturnType<typeof createMetricsRegistry>): FlowLogSink => {
  const c = sinkCounts(metrics, 'null');
  return { name: 'null', write: (r: readonly FlowLogRecord[]) => c.written(r.length), [Symbol.asyncDispose]: async () => undefined };
};


/**
 * CPU ns per flow of `run` over fresh batches (the process's CPU time, not the wall clock: this
 * machine is shared, and a neighbour's time slice is not ours), for ROUND_MS of CPU; the median of ROUNDS.
 */
function nsPerFlow(run: (flows: Flow[]) => void): number {
  const out: number[] = [];
  let seq = 0;
  const cpuNs = (c: NodeJS.CpuUsage): number => (c.user + c.system) * 1000;
  for (let r = 0; r < ROUNDS; r++) {
    globalThis.gc?.();
    const c0 = process.cpuUsage();
    let n = 0;
    while (cpuNs(process.cpuUsage(c0)) < ROUND_MS * 1e6) {
      for (let k = 0; k < 8; k++) {
        run(batch(BATCH, seq));
        seq += BATCH;
        n += BATCH;
      }
    }
    out.push(cpuNs(process.cpuUsage(c0)) / n);
  }
  return median(out);
}

async function exportCost(): Promise<void> {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const dir = mkdtempSync(join(tmpdir(), 'export-bench-'));
  const deny = [{ source_pod: ['kube-system/'] }];
  const refuseAll = createFlowExporter({ name: 'b', selection: staticSelection([{ destination_port: ['1'] }], deny), sinks: [nullSink(metrics)], nodeName: 'node-0', protos, metrics, log });
  const record = createFlowExporter({ name: 'b', selection: staticSelection([], deny), sinks: [nullSink(metrics)], nodeName: 'node-0', protos, metrics, log });
  const fileSink = createFileSink({ path: join(dir, 'events.log'), maxSizeBytes: 10 << 20, maxBackups: 2, compress: false, counts: sinkCounts(metrics, 'file'), log, maxBufferedBytes: 1 << 30 });
  const file = createFlowExporter({ name: 'b', selection: staticSelection([], deny), sinks: [fileSink], nodeName: 'node-0', protos, metrics, log });
  const agg = createFlowExporter({ name: 'b', selection: staticSelection([], deny), aggregation: { intervalMs: 30_000, maxKeys: 16_384 }, sinks: [nullSink(metrics)], nodeName: 'node-0', protos, metrics, log });
  const results: Record<string, number> = {};
  // Alternated, so a busy neighbour slows every stage alike.
  const stages: [string, (f: Flow[]) => void][] = [
    ['baseline', () => undefined],
    ['select', (f) => refuseAll.consume({ source: 'b', flows: f })],
    ['record', (f) => record.consume({ source: 'b', flows: f })],
    ['file', (f) => file.consume({ source: 'b', flows: f })],
    ['aggregate', (f) => agg.consume({ source: 'b', flows: f })],
  ];
  const runs: Record<string, number[]> = {};
  for (let i = 0; i < 2; i++) {
    for (const [name, fn] of stages) {
      (runs[name] ??= []).push(nsPerFlow(fn));
      if (name === 'file') await fileSink.flushed();
    }
  }
  for (const [name, xs] of Object.entries(runs)) results[name] = Math.round(Math.min(...xs));
  for (const e of [refuseAll, record, file, agg]) await e[Symbol.asyncDispose]();
  rmSync(dir, { recursive: true, force: true });
  const per = (k: string): number => (results[k] as number) - (results['baseline'] as number);
  console.log(JSON.stringify({
    bench: 'export-cost', unit: 'ns/flow', batch: BATCH, rounds: ROUNDS, roundMs: ROUND_MS, ...results,
    exportNsPerFlow: { select: per('select'), record: per('record'), file: per('file'), aggregate: per('aggregate') },
  }));
}

async function exportCpu(): Promise<void> {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const dir = mkdtempSync(join(tmpdir(), 'export-cpu-'));
  const sink = createFileSink({ path: join(dir, 'events.log'), maxSizeBytes: 10 << 20, maxBackups: 5, compress: false, counts: sinkCounts(metrics, 'file'), log });
  const exp = createFlowExporter({ name: 'b', selection: staticSelection([], [{ source_pod: ['kube-system/'] }]), sinks: [sink], nodeName: 'node-0', protos, metrics, log });
  globalThis.gc?.();
  const gen = await paced(RATE, CPU_S, () => undefined);
  globalThis.gc?.();
  const run = await paced(RATE, CPU_S, (flows) => exp.consume({ source: 'b', flows }));
  await exp[Symbol.asyncDispose]();
  const values = (await metrics.registry.getSingleMetric(catalog.flowLogRecords.name)?.get())?.values ?? [];
  const written = values.filter((v) => v.labels['result'] === 'written').reduce((s, v) => s + v.value, 0);
  const dropped = values.filter((v) => v.labels['result'] === 'dropped').reduce((s, v) => s + v.value, 0);
  const bytes = readdirSync(dir).reduce((s, n) => s + statSync(join(dir, n)).size, 0);
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify({
    bench: 'export-cpu', rate: RATE, seconds: CPU_S, generateCpuPct: +gen.cpuPct.toFixed(1), exportCpuPct: +run.cpuPct.toFixed(1),
    exportShareCpuPct: +(run.cpuPct - gen.cpuPct).toFixed(1), flows: run.flows, written, dropped, bytesPerFlow: Math.round(bytes / Math.max(1, written)),
    achievedRate: Math.round(run.flows / run.wallS),
    // When the machine cannot give the process the rate (achievedRate < rate), the CPU the export
    // took per flow, times the rate: the CPU at `rate` flows/s on a core of this speed.
    exportCpuUsPerFlow: +(((run.cpuPct / 100) * run.wallS * 1e6) / run.flows - ((gen.cpuPct / 100) * gen.wallS * 1e6) / gen.flows).toFixed(2),
    exportCpuPctAtRate: +((((run.cpuPct / 100) * run.wallS) / run.flows - ((gen.cpuPct / 100) * gen.wallS) / gen.flows) * RATE * 100).toFixed(1),
  }));
}

function aggregationRatio(): void {
  // The soak's load: 100 pods (10.238.0.1-100), one UDP socket each (one source port), 64-byte
  // datagrams round-robin to the service 10.237.0.1:9000 at 50 000 packets/s, one flow per packet.
  const pods = Array.from({ length: 100 }, (_, i) => ({ ip: `10.238.0.${i + 1}`, port: 40_000 + i }));
  const pps = 50_000;
  const intervalMs = 30_000;
  let now = Date.UTC(2026, 0, 1);
  let records = 0;
  const agg = createAggregator({ intervalMs, maxKeys: 16_384 }, { deliver: (r) => (records += r.length), now: () => now });
  let flowsIn = 0;
  const stepMs = 10;
  const perStep = (pps * stepMs) / 1000;
  const steps = (AGG_S * 1000) / stepMs;
  const hubble = { verdict: 'FORWARDED', IP: {}, Type: 'L3_L4' };
  for (let s = 0; s < steps; s++) {
    for (let i = 0; i < perStep; i++) {
      const p = pods[flowsIn % pods.length] as { ip: string; port: number };
      const f = createFlow({ srcIp: p.ip, dstIp: '10.237.0.1', verdict: 'FORWARDED', proto: 17, srcPort: p.port, dstPort: 9000, bytes: 64, direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT', timeMs: now });
      agg.add(f, hubble);
      flowsIn++;
    }
    now += stepMs;
    if ((s + 1) % (intervalMs / stepMs) === 0) agg.flush();
  }
  agg[Symbol.dispose]();
  console.log(JSON.stringify({
    bench: 'export-aggregation', traffic: 'bench/soak: 100 pods, 50000 UDP packets/s to one service port', simulatedSeconds: AGG_S, intervalS: intervalMs / 1000,
    flowsIn, recordsOut: records, ratio: +(records / flowsIn).toExponential(3), cut: `${Math.round(flowsIn / records)}:1`,
  }));
}

await exportCost();
await exportCpu();
aggregationRatio();
