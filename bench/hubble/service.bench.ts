/**
 * The Hubble service's costs (src/server/hubble), in one process with the real ring, mapping and
 * gRPC server (@grpc/grpc-js over loopback):
 * (Followers, the old grpc-js writes beside the raw path: follow.bench.ts.)
 * - `drainNsPerFlow` off / on: the drain path's cost per flow with the service off (enricher →
 *   discard) and on with no client (enricher → ring + seen counter), and `cpuPctAt20k` the CPU
 *   share of a steady 20 000 flows/s, off vs on (the goal: within noise).
 * - `serviceRssBytes`: RSS added by loading the service (grpc-js, protobufjs, our protos) and
 *   starting the server, in a fresh `node --max-semi-space-size=2` (the agent's flags) after a GC.
 * - `addedHeapBytes4096`: heap kept by a full ring of 4 096 distinct enriched flows (the flows would
 *   otherwise be garbage after the drain; endpoints are the IP cache's, shared), after a full GC.
 * Prints one JSON line. Run with `node --expose-gc` (make bench does).
 *
 * Figures, 2026-11-23, 2 vCPU VM shared with other builds (load 0.7–3), Node 22, three runs:
 * - follow (then measured here, since moved to follow.bench.ts): 10 000–17 000 flows/s delivered,
 *   whatever was offered beyond that; grpc-js wrote one HTTP/2 DATA frame and one socket write per
 *   message (~60–70 µs of the event loop); our mapping and protobuf encoding were ~5 µs of it.
 * - drain path: 70–103 ns/flow off vs 76–111 on (enricher included): +5–15 ns per flow, a store
 *   and a counter; CPU at 20 000 flows/s 2.2–2.7% off vs 2.4–2.8% on: within noise.
 * - RSS of the service (grpc-js, protobufjs, protos, server): 11–22 MB (noisy; loaded only with
 *   hubble.enabled); a full ring of 4 096 flows keeps 1.18 MB of heap (~290 B per flow).
 */
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { createEnricher } from '../../src/enricher/index.js';
import type { Flow, FlowConsumer } from '../../src/flow/index.js';
import { discardFlows } from '../../test/fakes/flows.js';
import { batch, lookup } from './flows.js';
import { catalog, createMetricsRegistry } from '../../src/metrics/index.js';
import { createFlowRing } from '../../src/server/hubble/index.js';

const PROTO_DIR = fileURLToPath(new URL('../../../proto/hubble', import.meta.url));
const gc = (globalThis as { gc?: () => void }).gc;


const pipeline = (next: FlowConsumer): FlowConsumer => createEnricher(lookup, next);

function drainNsPerFlow(consumer: FlowConsumer): number {
  const batches = Array.from({ length: 200 }, (_, b) => batch(256, b * 256));
  const c = pipeline(consumer);
  for (const fs of batches.slice(0, 20)) c.consume({ source: 'bench', flows: fs });
  const t0 = process.hrtime.bigint();
  for (let r = 0; r < 5; r++) for (const fs of batches) c.consume({ source: 'bench', flows: fs });
  return Number(process.hrtime.bigint() - t0) / (5 * 200 * 256);
}

/** CPU % of one core while feeding `rate` flows/s for `ms` (batches of 256 every 256/rate s), flows made beforehand. */
async function cpuAt(consumer: FlowConsumer, rate: number, ms: number): Promise<number> {
  const perTick = 256;
  const ticks = Math.ceil((rate * ms) / 1000 / perTick);
  const batches = Array.from({ length: ticks }, (_, b) => batch(perTick, b * perTick));
  const c = pipeline(consumer);
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < ticks; i++) {
    c.consume({ source: 'bench', flows: batches[i] as Flow[] });
    const due = t0 + ((i + 1) * perTick * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const u = process.cpuUsage(u0);
  return ((u.user + u.system) / 1000 / (performance.now() - t0)) * 100;
}

function heapKept(): number {
  gc?.();
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const ring = createFlowRing(4096);
  const c = pipeline(ring);
  for (let b = 0; b < 16; b++) c.consume({ source: 'bench', flows: batch(256, b * 256) });
  gc?.();
  gc?.();
  const after = process.memoryUsage().heapUsed;
  if (ring.stats().size !== 4096) throw new Error('ring not full');
  return after - before;
}

/** The agent's ring stage: the ring and the seen counter (src/server/hubble/service.ts). */
function ringStage(): FlowConsumer {
  const ring = createFlowRing(4096);
  const seen = createMetricsRegistry({ processMetrics: false }).counter(catalog.hubbleFlowsSeen);
  return { consume: (b) => { ring.consume(b); seen.inc({}, b.flows.length); } };
}

function serviceRss(): number {
  const index = new URL('../../src/server/hubble/index.js', import.meta.url).href;
  const script = `
const { createLogger } = await import(${JSON.stringify(new URL('../../src/log/index.js', import.meta.url).href)});
const log = createLogger({ level: 'error', component: 'x' });
const settle = async () => { for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 100)); } return process.memoryUsage().rss; };
const r0 = await settle();
const h = await import(${JSON.stringify(index)});
const s = await h.startHubbleServer({ protos: h.loadHubbleProtos(${JSON.stringify(PROTO_DIR)}), ring: h.createFlowRing(4096), listen: { host: '127.0.45.9', port: 0 }, nodeName: 'n', version: 'v', peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]() {} }) }, log });
const r1 = await settle();
console.log(r1 - r0);
await s[Symbol.asyncDispose]();`;
  const r = spawnSync(process.execPath, ['--expose-gc', '--max-semi-space-size=2', '--input-type=module', '-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`service RSS probe failed: ${r.stderr}`);
  return Number(r.stdout.trim());
}

const off = drainNsPerFlow(discardFlows);
const on = drainNsPerFlow(ringStage());
const heap = heapKept();
const cpuOff = await cpuAt(discardFlows, 20_000, 2000);
const cpuOn = await cpuAt(ringStage(), 20_000, 2000);
process.stdout.write(JSON.stringify({
  bench: 'hubble-service',
  drainNsPerFlow: { off: Math.round(off), on: Math.round(on) },
  cpuPctAt20k: { off: Number(cpuOff.toFixed(1)), on: Number(cpuOn.toFixed(1)) },
  serviceRssBytes: serviceRss(), addedHeapBytes4096: heap, addedHeapBytesPerFlow: Math.round(heap / 4096),
}) + '\n');
