/**
 * The OTLP flow-log sink's costs (src/export/otlp), beside the file sink's, printed as JSON lines:
 *
 * 1. `otlp-cost`: CPU ns per flow, side by side in one run (the median of BENCH_ROUNDS rounds of
 *    BENCH_ROUND_MS of CPU each, alternated twice, the lower kept; 256-flow batches of enriched
 *    flows as in export.bench.ts, every flow selected): `baseline` (making the batch), `file` (the
 *    exporter's record and the real file sink: JSON.stringify and queueing; its writes are off the
 *    drain), `otlpQueue` (the record, made an OTLP log record with its attributes and queued; the
 *    batches handed to a transport that sends nothing), `otlpProtobuf` and `otlpJson` (the same,
 *    the transport encoding each batch as the gRPC / HTTP-protobuf request (wire.ts, what the
 *    transports send) and the HTTP-JSON one: encode + queue, all but the socket), and
 *    `otlpProtobufjs` (protobufjs's encoding of the same request, which wire.ts replaced). The per-flow cost of a stage is its figure minus `baseline`.
 * 2. `otlp-cpu`: the whole process's CPU (one core = 100 %) while the exporter sends 50 000 flows/s
 *    (BENCH_RATE) for BENCH_CPU_S seconds over OTLP to a real OpenTelemetry Collector (hack/otelcol,
 *    started here on loopback, its file exporter writing what arrived), over gRPC and over
 *    HTTP/protobuf, beside the same pacing loop making the flows without exporting them
 *    (`generate`); the export's share is the difference. Every flow must end written (the sink is
 *    drained and the collector's file counted), none dropped. When the collector is not built the
 *    line says so (`collector: "not built: ..."`) and carries no figures.
 *
 * BENCH_EXPORT_BASELINE=<dist> (another build's dist/, e.g. main's copied under .cache/ so that it finds
 * node_modules): instead of the two lines above, one `otlp-baseline` line, that build's exporter and
 * sinks beside this one's, alternated stage by stage: `file` (the file sink alone), `otlp` (the OTLP
 * sink alone, protobuf-encoded) and `fileOtlp` (both on one exporter, as the ContainerNetworkLog
 * exporter with flowLogs.otlp), CPU ns per flow; and each build's encodeLogsRequest alone over the
 * same 512-record batches (µs per record, best of 5, 10 passes alternated), with whether the two
 * builds wrote the same bytes.
 *
 * Figures are in bench/export/README.md. Run with `node --expose-gc` (make bench does).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FlowLogsOtlpConfig, OtlpProtocol } from '../../src/config/index.js';
import type { Flow } from '../../src/flow/index.js';
import { loadFlowProtos } from '../../src/flow/hubble/index.js';
import { createFileSink, createFlowExporter, sinkCounts, staticSelection, type FlowLogSink } from '../../src/export/index.js';
import { createOtlpFlowSink, createOtlpSink, encodeLogsRequest, loadExportCodec, SCOPE_NAME, otlpCounts, toJsonRequest, type OtlpSink, type Transport } from '../../src/export/otlp/index.js';
import { toProtoRequest } from '../../test/export/otlp-proto-request.js';
import { createLogger } from '../../src/log/index.js';
import { batch, median, paced } from './flows.js';
import { catalog, createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import { freePort, otelcolBinary, startCollector, waitArrived } from '../../test/export/otelcol.js';

const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const ROUNDS = envNum('BENCH_ROUNDS', 5);
const ROUND_MS = envNum('BENCH_ROUND_MS', 300);
const RATE = envNum('BENCH_RATE', 50_000);
const CPU_S = envNum('BENCH_CPU_S', 5);
const BATCH = 256;

const protos = loadFlowProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
const PROTO_DIR = fileURLToPath(new URL('../../../proto', import.meta.url));
const log = createLogger({ level: 'error', stream: new PassThrough() });
const DENY = [{ source_pod: ['kube-system/'] }];

const cpuNs = (c: NodeJS.CpuUsage): number => (c.user + c.system) * 1000;

/**
 * CPU ns per flow of `run` over fresh batches, for ROUND_MS of CPU; the median of ROUNDS. The loop
 * yields to the event loop after every batch (every stage alike), so the OTLP sink's sender runs
 * as it does on the agent's drain and its CPU is counted; `settle` waits for what a stage left.
 */
async function nsPerFlow(run: (flows: Flow[]) => void, settle: () => Promise<void>): Promise<number> {
  const out: number[] = [];
  let seq = 0;
  for (let r = 0; r < ROUNDS; r++) {
    globalThis.gc?.();
    const c0 = process.cpuUsage();
    let n = 0;
    while (cpuNs(process.cpuUsage(c0)) < ROUND_MS * 1e6) {
      run(batch(BATCH, seq));
      seq += BATCH;
      n += BATCH;
      await new Promise((r) => setImmediate(r));
    }
    await settle();
    out.push(cpuNs(process.cpuUsage(c0)) / n);
  }
  return median(out);
}

const resource = { nodeName: 'node-0', serviceName: 'retina-agent', serviceVersion: 'bench' };

/** A transport that sends nothing: `encode` makes the request the protocol would put on the wire. */
function localTransport(encode: 'none' | 'protobuf' | 'protobufjs' | 'json'): Transport {
  const codec = loadExportCodec(PROTO_DIR);
  return {
    send: async (records) => {
      if (encode === 'protobuf') encodeLogsRequest(records, resource, SCOPE_NAME);
      else if (encode === 'protobufjs') codec.serialize(toProtoRequest(records, resource));
      else if (encode === 'json') toJsonRequest(records, resource);
      return { kind: 'ok', rejected: 0 };
    },
    [Symbol.dispose]: () => undefined,
  };
}

async function dropped(metrics: MetricsRegistry): Promise<number> {
  const values = (await metrics.registry.getSingleMetric(catalog.flowLogRecords.name)?.get())?.values ?? [];
  return values.filter((v) => v.labels['result'] === 'dropped').reduce((s, v) => s + v.value, 0);
}

async function otlpCost(): Promise<void> {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const dir = mkdtempSync(join(tmpdir(), 'otlp-bench-'));
  const exporter = (sink: FlowLogSink): ReturnType<typeof createFlowExporter> =>
    createFlowExporter({ name: 'b', selection: staticSelection([], DENY), sinks: [sink], nodeName: 'node-0', protos, metrics, log });
  const fileSink = createFileSink({ path: join(dir, 'events.log'), maxSizeBytes: 10 << 20, maxBackups: 2, compress: false, counts: sinkCounts(metrics, 'file'), log, maxBufferedBytes: 1 << 30 });
  const otlp = (encode: 'none' | 'protobuf' | 'protobufjs' | 'json'): OtlpSink =>
    createOtlpSink({ transport: localTransport(encode), counts: otlpCounts(metrics), log, queueSize: 1 << 20, batchSize: 512, flushIntervalMs: 1000 });
  const sinks = { otlpQueue: otlp('none'), otlpProtobuf: otlp('protobuf'), otlpJson: otlp('json'), otlpProtobufjs: otlp('protobufjs') };
  const file = exporter(fileSink);
  const stages: [string, (f: Flow[]) => void, () => Promise<void>][] = [
    ['baseline', () => undefined, async () => undefined],
    ['file', (f) => file.consume({ source: 'b', flows: f }), () => fileSink.flushed()],
    ...Object.entries(sinks).map(([name, s]): [string, (f: Flow[]) => void, () => Promise<void>] => {
      const e = exporter(s);
      return [name, (f) => e.consume({ source: 'b', flows: f }), () => s.idle()];
    }),
  ];
  const runs: Record<string, number[]> = {};
  // Alternated, so a busy neighbour slows every stage alike.
  for (let i = 0; i < 2; i++) for (const [name, fn, settle] of stages) (runs[name] ??= []).push(await nsPerFlow(fn, settle));
  const results: Record<string, number> = {};
  for (const [name, xs] of Object.entries(runs)) results[name] = Math.round(Math.min(...xs));
  const lost = await dropped(metrics);
  await file[Symbol.asyncDispose]();
  for (const s of Object.values(sinks)) await s[Symbol.asyncDispose]();
  rmSync(dir, { recursive: true, force: true });
  const per = (k: string): number => (results[k] as number) - (results['baseline'] as number);
  console.log(JSON.stringify({
    bench: 'otlp-cost', unit: 'ns/flow', batch: BATCH, otlpBatch: 512, rounds: ROUNDS, roundMs: ROUND_MS, ...results, dropped: lost,
    exportNsPerFlow: { file: per('file'), otlpQueue: per('otlpQueue'), otlpProtobuf: per('otlpProtobuf'), otlpJson: per('otlpJson'), otlpProtobufjs: per('otlpProtobufjs') },
  }));
}

function otlpConfig(endpoint: string, protocol: OtlpProtocol): FlowLogsOtlpConfig {
  return {
    endpoint, protocol, headers: {}, tls: { caFile: '', certFile: '', keyFile: '', serverName: '', insecureSkipVerify: false },
    timeoutMs: 10_000, queueSize: 100_000, batchSize: 512, flushIntervalMs: 1000, compression: 'none',
  };
}

async function otlpCpu(): Promise<void> {
  try {
    otelcolBinary();
  } catch (e) {
    console.log(JSON.stringify({ bench: 'otlp-cpu', rate: RATE, collector: `not built: ${(e as Error).message}` }));
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'otlp-cpu-'));
  globalThis.gc?.();
  const gen = await paced(RATE, CPU_S, () => undefined);
  const out: Record<string, unknown> = { bench: 'otlp-cpu', rate: RATE, seconds: CPU_S, collector: 'hack/otelcol (v0.161.0) on loopback', generateCpuPct: +gen.cpuPct.toFixed(1) };
  for (const protocol of ['grpc', 'http/protobuf'] as const) {
    const [g, h] = [await freePort(), await freePort()];
    const col = await startCollector({ dir, grpcPort: g, httpPort: h }, `bench-${protocol.replace('/', '-')}`);
    const metrics = createMetricsRegistry({ processMetrics: false });
    const sink = createOtlpFlowSink({ config: otlpConfig(`http://127.0.0.1:${protocol === 'grpc' ? g : h}`, protocol), nodeName: 'node-0', version: 'bench', protoDir: PROTO_DIR, metrics, log });
    const exp = createFlowExporter({ name: 'b', selection: staticSelection([], DENY), sinks: [sink], nodeName: 'node-0', protos, metrics, log });
    try {
      globalThis.gc?.();
      const run = await paced(RATE, CPU_S, (flows) => exp.consume({ source: 'b', flows }));
      await sink.idle();
      const values = (await metrics.registry.getSingleMetric(catalog.flowLogRecords.name)?.get())?.values ?? [];
      const written = values.filter((v) => v.labels['result'] === 'written').reduce((s, v) => s + v.value, 0);
      const arrivedN = (await waitArrived(col.out, run.flows, 60_000)).length;
      const usPerFlow = ((run.cpuPct / 100) * run.wallS * 1e6) / run.flows - ((gen.cpuPct / 100) * gen.wallS * 1e6) / gen.flows;
      out[protocol] = {
        exportCpuPct: +run.cpuPct.toFixed(1), exportShareCpuPct: +(run.cpuPct - gen.cpuPct).toFixed(1), flows: run.flows, written,
        dropped: await dropped(metrics), arrived: arrivedN, achievedRate: Math.round(run.flows / run.wallS),
        // As export.bench.ts: the CPU per flow times the rate, the CPU at `rate` on a core of this speed.
        exportCpuUsPerFlow: +usPerFlow.toFixed(2), exportCpuPctAtRate: +((usPerFlow / 1e6) * RATE * 100).toFixed(1),
      };
    } finally {
      await exp[Symbol.asyncDispose]();
      await col.stop();
    }
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify(out));
}

/** One build's exporter, sinks and encoder (this tree's, or BENCH_EXPORT_BASELINE's). */
interface Impl {
  readonly name: string;
  readonly exportMod: typeof import('../../src/export/index.js');
  readonly otlpMod: typeof import('../../src/export/otlp/index.js');
  readonly protos: ReturnType<typeof loadFlowProtos>;
}

async function loadImpl(name: string, dist: string): Promise<Impl> {
  const exportMod = (await import(`${dist}/src/export/index.js`)) as Impl['exportMod'];
  const otlpMod = (await import(`${dist}/src/export/otlp/index.js`)) as Impl['otlpMod'];
  const flowHubble = (await import(`${dist}/src/flow/hubble/index.js`)) as { loadFlowProtos: typeof loadFlowProtos };
  return { name, exportMod, otlpMod, protos: flowHubble.loadFlowProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url))) };
}

async function otlpBaseline(baselineDir: string): Promise<void> {
  const impls = [await loadImpl('baseline', baselineDir), await loadImpl('this', fileURLToPath(new URL('../..', import.meta.url)))];
  const metrics = createMetricsRegistry({ processMetrics: false });
  const dir = mkdtempSync(join(tmpdir(), 'otlp-baseline-'));
  type Stage = [string, (f: Flow[]) => void, () => Promise<void>];
  const stagesOf = (impl: Impl): Stage[] => {
    const { createFileSink: fileSinkOf, createFlowExporter: exporterOf, sinkCounts: countsOf, staticSelection: selectionOf } = impl.exportMod;
    const file = (tag: string): ReturnType<typeof fileSinkOf> =>
      fileSinkOf({ path: join(dir, `${impl.name}-${tag}.log`), maxSizeBytes: 10 << 20, maxBackups: 1, compress: false, counts: countsOf(metrics, 'file'), log, maxBufferedBytes: 1 << 30 });
    const otlp = (): OtlpSink => impl.otlpMod.createOtlpSink({
      transport: { send: async (records) => (impl.otlpMod.encodeLogsRequest(records, resource, SCOPE_NAME), { kind: 'ok', rejected: 0 }), [Symbol.dispose]: () => undefined },
      counts: impl.otlpMod.otlpCounts(metrics), log, queueSize: 1 << 20, batchSize: 512, flushIntervalMs: 1000,
    });
    const exporter = (sinks: FlowLogSink[]): ReturnType<typeof exporterOf> =>
      exporterOf({ name: 'b', selection: selectionOf([], DENY), sinks, nodeName: 'node-0', protos: impl.protos, metrics, log });
    const fileOnly = file('file');
    const otlpOnly = otlp();
    const both: FlowLogSink[] = [file('both'), otlp()];
    const settle = async (s: readonly FlowLogSink[]): Promise<void> => {
      for (const x of s) await ('flushed' in x ? (x as ReturnType<typeof fileSinkOf>).flushed() : (x as OtlpSink).idle());
    };
    const e1 = exporter([fileOnly]);
    const e2 = exporter([otlpOnly]);
    const e3 = exporter(both);
    return [
      ['file', (f) => e1.consume({ source: 'b', flows: f }), () => settle([fileOnly])],
      ['otlp', (f) => e2.consume({ source: 'b', flows: f }), () => settle([otlpOnly])],
      ['fileOtlp', (f) => e3.consume({ source: 'b', flows: f }), () => settle(both)],
    ];
  };
  const stages = new Map(impls.map((impl) => [impl.name, stagesOf(impl)]));
  const runs: Record<string, Record<string, number[]>> = {};
  const base: number[] = [];
  for (let i = 0; i < 2; i++) {
    base.push(await nsPerFlow(() => undefined, async () => undefined));
    for (let k = 0; k < 3; k++) {
      for (const impl of (i + k) % 2 === 0 ? impls : [...impls].reverse()) {
        const [stage, fn, settle] = (stages.get(impl.name) as Stage[])[k] as Stage;
        ((runs[impl.name] ??= {})[stage] ??= []).push(await nsPerFlow(fn, settle));
      }
    }
  }
  const baselineNs = Math.round(Math.min(...base));
  const perFlow: Record<string, Record<string, number>> = {};
  for (const [name, byStage] of Object.entries(runs)) {
    perFlow[name] = Object.fromEntries(Object.entries(byStage).map(([stage, xs]) => [stage, Math.round(Math.min(...xs)) - baselineNs]));
  }
  // The encoder alone, over the same OTLP log records (made once, by this tree).
  const recs = await (async () => {
    const out: Parameters<typeof encodeLogsRequest>[0][number][] = [];
    const collect: FlowLogSink = { name: 'collect', write: (r) => out.push(...r.map((x) => impls[1]!.otlpMod.toLogRecord(x, '1764151201999999999'))), [Symbol.asyncDispose]: async () => undefined };
    const e = createFlowExporter({ name: 'b', selection: staticSelection([], DENY), sinks: [collect], nodeName: 'node-0', protos, metrics, log });
    for (let i = 0; i < 8; i++) e.consume({ source: 'b', flows: batch(BATCH, i * BATCH) });
    return out;
  })();
  const batches = Array.from({ length: Math.floor(recs.length / 512) }, (_, i) => recs.slice(i * 512, (i + 1) * 512));
  const same = batches.every((b) => impls[0]!.otlpMod.encodeLogsRequest(b, resource, SCOPE_NAME).equals(impls[1]!.otlpMod.encodeLogsRequest(b, resource, SCOPE_NAME)));
  const encodeUsPerRecord: Record<string, number[]> = {};
  for (let pass = 0; pass < 10; pass++) {
    for (const impl of pass % 2 === 0 ? impls : [...impls].reverse()) {
      let best = Infinity;
      for (let k = 0; k < 5; k++) {
        const t0 = performance.now();
        for (const b of batches) impl.otlpMod.encodeLogsRequest(b, resource, SCOPE_NAME);
        best = Math.min(best, performance.now() - t0);
      }
      (encodeUsPerRecord[impl.name] ??= []).push(Number(((best * 1000) / recs.length).toFixed(3)));
    }
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify({
    bench: 'otlp-baseline', baseline: baselineDir, unit: 'ns/flow (CPU, minus making the batch)', batch: BATCH, rounds: ROUNDS, roundMs: ROUND_MS,
    baselineNs, perFlow, encode: { records: recs.length, sameBytes: same, usPerRecord: encodeUsPerRecord }, dropped: await dropped(metrics),
  }));
}

const exportBaseline = process.env['BENCH_EXPORT_BASELINE'];
if (exportBaseline) {
  await otlpBaseline(exportBaseline);
  process.exit(0);
}
await otlpCost();
await otlpCpu();
