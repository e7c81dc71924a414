/**
 * Hubble history beyond the ring (hubble.history.fromExport): the read rate of stored flows, from
 * the static exporter's files through the JSON reader, the filters and the frame encoder to a client,
 * gzipped backups beside plain ones, alternated ABBA in one run.
 * Fixture: BENCH_HISTORY_FLOWS (default 60 000) enriched flows (bench/hubble/flows.ts: 200 pods,
 * labels, workloads, services, 10% drops), one per ms, written by the real exporter and file sink
 * (rotated at 4 MiB, `compress` on for one copy, off for the other), a ring of 1 024 after them.
 * - `serverFlowsPerSec`: src/server/hubble/history.ts `readStoredFlows` with every flow selected,
 *   each encoded as its GetFlowsResponse frame (encode.ts), no socket: the agent's side alone;
 *   `serverCpuUsPerFlow` the same as CPU time (user + system) per flow, steadier on a busy machine;
 *   `serverDropsPerSec`: the same read with `--verdict DROPPED` (10% pass): lines read per second
 *   when most are filtered out.
 * - `cliFlowsPerSec`: the real `hubble observe --since <far back> -o jsonpb` (Cilium 1.18.4), its
 *   lines counted, against a Hubble server with the history (when hack/hubble/build.sh built it):
 *   flows per second delivered end to end (the CLI's decode and print included).
 * Prints one JSON line. BENCH_ROUNDS (default 3 ABBA pairs) tunes the run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createEnricher } from '../../src/enricher/index.js';
import { createExportHistory, createFileSink, createFlowExporter, sinkCounts, staticSelection } from '../../src/export/index.js';
import type { Flow } from '../../src/flow/index.js';
import { compileFlowFilters, hubbleProtoFiles, loadFlowProtos } from '../../src/flow/hubble/index.js';
import { createLogger } from '../../src/log/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import { createFlowRing, loadHubbleProtos, readStoredFlows, startHubbleServer, type FlowMatcher } from '../../src/server/hubble/index.js';
import { batch, lookup } from './flows.js';

const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const N = envNum('BENCH_HISTORY_FLOWS', 60_000);
const ROUNDS = envNum('BENCH_ROUNDS', 3);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const files = hubbleProtoFiles(join(ROOT, 'proto/hubble'));
const flowProtos = loadFlowProtos(files);
const protos = loadHubbleProtos(files);
const log = createLogger({ level: 'error', stream: new PassThrough() });
const dir = mkdtempSync(join(tmpdir(), 'history-bench-'));
const T0 = Date.now() - 3600_000;

interface Store {
  readonly label: 'plain' | 'gzip';
  readonly history: ReturnType<typeof createExportHistory>;
  readonly ring: Flow[];
  readonly bytes: number;
  readonly files: number;
}

/** N enriched flows through the real exporter and file sink; the last 1 024 are the ring's. */
async function store(label: 'plain' | 'gzip'): Promise<Store> {
  const path = join(dir, label, 'events.log');
  const compress = label === 'gzip';
  const metrics = createMetricsRegistry({ processMetrics: false });
  let latest = T0;
  const sink = createFileSink({ path, maxSizeBytes: 4 << 20, maxBackups: 0, compress, counts: sinkCounts(metrics, 'file'), log, now: () => new Date(latest + 1000) });
  const exporter = createFlowExporter({ name: 'static', selection: staticSelection([], []), sinks: [sink], nodeName: 'node-0', protos: flowProtos, metrics, log });
  const ring = createFlowRing(1024);
  const enricher = createEnricher(lookup, { consume: (b) => { ring.consume(b); exporter.consume(b); } });
  for (let b = 0; b < N / 500; b++) {
    const fs = batch(500, b * 500).map((f, i) => ({ ...f, timeMs: T0 + b * 500 + i }));
    latest = T0 + b * 500 + 499;
    enricher.consume({ source: 'bench', flows: fs });
    await sink.flushed();
  }
  await exporter[Symbol.asyncDispose]();
  const held: Flow[] = [];
  for (let s = ring.tail(); s < ring.head(); s++) held.push(ring.at(s) as Flow);
  const names = readdirSync(join(dir, label));
  const config = { file: { path, maxSizeMb: 4, maxBackups: 0, compress }, allowList: [], denyList: [], fieldMask: [], aggregationIntervalMs: 0, keys: { allowList: 'a', denyList: 'd', fieldMask: 'm' } };
  return {
    label, ring: held, history: createExportHistory({ config, nodeName: 'node-0', protos: flowProtos }),
    bytes: names.reduce((n, f) => n + statSync(join(dir, label, f)).size, 0), files: names.length,
  };
}

/** Stored flows (up to the ring) through the matcher and the frame encoder, per second; how many passed. */
async function serverRate(s: Store, matcher: FlowMatcher): Promise<{ perSec: number; cpuUsPerLine: number; sent: number; lines: number }> {
  const stats = { lines: 0, bad: 0 };
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let sent = 0;
  let bytes = 0;
  for await (const out of readStoredFlows(s.history, {
    since: { seconds: 0, nanos: 0 }, until: undefined, matcher, ring: s.ring, nowMs: Date.now(), readFlow: protos.readFlowJson, cancelled: () => false,
  }, stats)) {
    for (const p of out) bytes += protos.flowsFrame({ flow: p.hubble, node_name: 'node-0', time: p.hubble['time'] }).length;
    sent += out.length;
  }
  if (bytes === 0 && sent > 0) throw new Error('nothing encoded');
  const s_ = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return { perSec: Math.round(stats.lines / s_), cpuUsPerLine: Number(((cpu.user + cpu.system) / stats.lines).toFixed(2)), sent, lines: stats.lines };
}

function tools(): string | undefined {
  const r = spawnSync('bash', [`${ROOT}hack/hubble/build.sh`], { encoding: 'utf8', env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The real CLI reading every stored flow (and the ring's) from a Hubble server with the history: flows per second end to end. */
async function cliRate(s: Store, bin: string): Promise<number> {
  const ring = createFlowRing(1024);
  ring.consume({ source: 'bench', flows: s.ring });
  const server = await startHubbleServer({
    protos, ring, listen: { host: '127.0.45.21', port: 0 }, nodeName: 'node-0', version: 'bench', log, history: s.history,
    peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
  });
  try {
    const t0 = process.hrtime.bigint();
    const lines = await new Promise<number>((resolve, reject) => {
      const c = spawn(`${bin}/hubble`, ['observe', '--server', `127.0.45.21:${server.port}`, '--since', new Date(T0 - 60_000).toISOString(), '-o', 'jsonpb'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HUBBLE_CONFIG: '/dev/null' } });
      let n = 0;
      let err = '';
      c.stdout.on('data', (d: Buffer) => { for (let i = d.indexOf(10); i !== -1; i = d.indexOf(10, i + 1)) n++; });
      c.stderr.on('data', (d: Buffer) => (err += d.toString()));
      c.on('close', (code) => (code === 0 ? resolve(n) : reject(new Error(`hubble exited ${code}: ${err}`))));
    });
    if (lines !== N) throw new Error(`the CLI printed ${lines} flows, not ${N}`);
    return Math.round(lines / (Number(process.hrtime.bigint() - t0) / 1e9));
  } finally {
    await server[Symbol.asyncDispose]();
  }
}

const stores = { plain: await store('plain'), gzip: await store('gzip') };
const all = compileFlowFilters([], [], flowProtos.enums);
const drops = compileFlowFilters([{ verdict: ['DROPPED'] }], [], flowProtos.enums);
const bin = tools();
const results: Record<'plain' | 'gzip', { server: number[]; cpu: number[]; drops: number[]; dropsCpu: number[]; cli: number[] }> = {
  plain: { server: [], cpu: [], drops: [], dropsCpu: [], cli: [] }, gzip: { server: [], cpu: [], drops: [], dropsCpu: [], cli: [] },
};
for (let r = 0; r < ROUNDS; r++) {
  // ABBA: plain, gzip, gzip, plain.
  for (const label of ['plain', 'gzip', 'gzip', 'plain'] as const) {
    const s = stores[label];
    const a = await serverRate(s, all);
    if (a.sent !== N - s.ring.length) throw new Error(`${label}: ${a.sent} stored flows read, not ${N - s.ring.length}`);
    results[label].server.push(a.perSec);
    results[label].cpu.push(a.cpuUsPerLine);
    const d = await serverRate(s, drops);
    results[label].drops.push(d.perSec);
    results[label].dropsCpu.push(d.cpuUsPerLine);
    if (bin) results[label].cli.push(await cliRate(s, bin));
  }
}
const med = (xs: number[]): number | undefined => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : undefined);
const range = (xs: number[]): string => (xs.length ? `${Math.min(...xs)}–${Math.max(...xs)}` : 'n/a');
process.stdout.write(JSON.stringify({
  bench: 'hubble-history',
  fixture: `${N} enriched flows (bench/hubble/flows.ts) in the static exporter's files, rotated at 4 MiB; a ring of 1024`,
  files: { plain: { count: stores.plain.files, bytes: stores.plain.bytes }, gzip: { count: stores.gzip.files, bytes: stores.gzip.bytes } },
  serverFlowsPerSec: { plain: med(results.plain.server), gzip: med(results.gzip.server), plainRange: range(results.plain.server), gzipRange: range(results.gzip.server) },
  serverCpuUsPerFlow: { plain: med(results.plain.cpu), gzip: med(results.gzip.cpu) },
  serverDropsPerSec: { plain: med(results.plain.drops), gzip: med(results.gzip.drops) },
  serverDropsCpuUsPerLine: { plain: med(results.plain.dropsCpu), gzip: med(results.gzip.dropsCpu) },
  cliFlowsPerSec: bin ? { plain: med(results.plain.cli), gzip: med(results.gzip.cli), plainRange: range(results.plain.cli), gzipRange: range(results.gzip.cli) } : 'hubble CLI not built',
  conditions: { node: process.version, rounds: ROUNDS, load: (await import('node:os')).loadavg().map((x) => Number(x.toFixed(1))) },
}) + '\n');
rmSync(dir, { recursive: true, force: true });
