/**
 * The pipeline's worker threads (src/pipeline/workers.ts, worker-thread.ts): counts across workers equal to the
 * same records counted on the main thread; this thread's consumers get the flows in drain order and
 * they are not counted twice; a worker that dies is restarted and what it held is counted lost; a
 * full hand-off counts what it refuses; stopping merges the last counts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testAgentConfig } from '../ebpf/fake-context.js';
import { IpCache } from '../../src/cache/index.js';
import { cacheLookup, createEnricher } from '../../src/enricher/index.js';
import { partitionOf, type Flow, type FlowBatch, type RawRecordSink } from '../../src/flow/index.js';
import { silentLogger } from '../../src/log/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import { annotationSpec, createMetricsModule, type MetricsModule } from '../../src/metrics/module/index.js';
import { kernelClock } from '../../src/plugins/linux/ebpf-shared/clock.js';
import { PACKET_EVENT_SIZE, createPacketDecoder } from '../../src/plugins/linux/packetparser/decode.js';
import { RAW_DECODER_MODULE, RAW_PARTITION_KEY, peerHash } from '../../src/plugins/linux/packetparser/raw-decoder.js';
import { startNodePipeline } from '../../src/pipeline/index.js';
import { RINGBUF_HDR, SLOT_HEADER } from '../../src/pipeline/handoff.js';
import { startPipelineWorkers } from '../../src/pipeline/workers.js';

const OFFSET = 1.7e12;
const spec = annotationSpec(['ns-a', 'ns-b']);
const ref = { source: 'packetparser', module: RAW_DECODER_MODULE, options: {}, partitionKey: RAW_PARTITION_KEY };

function podCache(): IpCache {
  const c = new IpCache();
  for (let i = 1; i <= 20; i++) {
    c.upsertPod({
      kind: 'pod', namespace: i % 2 ? 'ns-a' : 'ns-b', name: `p${i}`, ips: [`10.1.0.${i}`], nodeIP: undefined, labels: { app: `app-${i % 3}` }, annotations: {},
      owners: [], workloads: [{ kind: 'Deployment', name: `w${i % 5}` }], nodeName: i <= 10 ? 'node-0' : 'node-1', // known nodes, as in a cluster (architecture.md: pods of unknown nodes are learnt per worker)
    });
  }
  return c;
}

/** `n` packet_event records (packet_event.h) between the cache's pods and one outside address, seeded. */
function records(n: number, seed = 1): DataView {
  const v = new DataView(new ArrayBuffer(n * PACKET_EVENT_SIZE));
  let x = seed;
  const rnd = (m: number): number => ((x = (x * 1103515245 + 12345) >>> 0) >>> 8) % m;
  for (let r = 0; r < n; r++) {
    const o = r * PACKET_EVENT_SIZE;
    v.setUint32(o, 1000 + r, true);
    v.setUint32(o + 8, (10 << 24) | (1 << 16) | (1 + rnd(20)), false);
    v.setUint32(o + 24, rnd(4) === 0 ? (20 << 24) | 7 : (10 << 24) | (1 << 16) | (1 + rnd(20)), false);
    v.setUint16(o + 40, 30000 + rnd(50), true);
    v.setUint16(o + 42, 80, true);
    v.setUint8(o + 44, 4);
    v.setUint8(o + 45, rnd(5) === 0 ? 17 : 6);
    v.setUint8(o + 46, rnd(2)); // FROM_ENDPOINT or TO_ENDPOINT
    v.setUint8(o + 47, 1 + rnd(2));
    v.setUint8(o + 48, rnd(2));
    const packets = 1 + rnd(6);
    v.setUint16(o + 50, [0x02, 0x12, 0x10, 0x18, 0x11][rnd(5)] as number, true);
    v.setUint32(o + 52, packets, true);
    v.setUint32(o + 56, packets * (60 + rnd(1400)), true);
    if (packets > 1) for (let k = 0; k < 10; k++) v.setUint32(o + 76 + 4 * k, rnd(packets + 1), true);
    v.setUint32(o + 116, peerHash(v, o), true); // as the kernel writes it
  }
  return v;
}

/** Pod labels (metricsPodLabelsAllowlist) for the first test's modules. */
const podLabels = [{ key: 'app', name: 'label_app' }];

function moduleOf(labels: typeof podLabels = []): { metrics: MetricsRegistry; module: MetricsModule } {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const module = createMetricsModule({ metrics, remoteContext: true, nodeName: 'node-0', podLabels: labels });
  module.apply(spec);
  return { metrics, module };
}

function decodeAll(v: DataView): Flow[] {
  const decode = createPacketDecoder({ clock: kernelClock(OFFSET) });
  const out: Flow[] = [];
  for (let o = 0; o < v.byteLength; o += PACKET_EVENT_SIZE) out.push(decode(v, o, PACKET_EVENT_SIZE));
  return out;
}

/** The adv_* lines of an exposition, sorted. */
async function adv(m: MetricsRegistry): Promise<string[]> {
  return (await m.expose()).body.split('\n').filter((l) => l.startsWith('networkobservability_adv_')).sort();
}

/** Hands the records over as a ring drain does: `drain` records, then flush. */
function pushAll(sink: RawRecordSink, v: DataView, drain: number): void {
  sink.param = OFFSET;
  let k = 0;
  for (let o = 0; o < v.byteLength; o += PACKET_EVENT_SIZE) {
    sink.push(v, o, PACKET_EVENT_SIZE);
    if (++k % drain === 0) sink.flush();
  }
  sink.flush();
}

/** The records laid out as a BPF ring buffer holds them: an 8-byte header before each, 128 bytes apart. */
const RING_RECORD = RINGBUF_HDR + PACKET_EVENT_SIZE;
function ringOf(v: DataView): DataView {
  const n = v.byteLength / PACKET_EVENT_SIZE;
  const out = new DataView(new ArrayBuffer(n * RING_RECORD));
  for (let r = 0; r < n; r++) {
    out.setUint32(r * RING_RECORD, PACKET_EVENT_SIZE, true);
    new Uint8Array(out.buffer).set(new Uint8Array(v.buffer, r * PACKET_EVENT_SIZE, PACKET_EVENT_SIZE), r * RING_RECORD + RINGBUF_HDR);
  }
  return out;
}

/** Hands the records over as the JavaScript ring walk does: pushRing, the run copied every 64 records (its releases), a flush every `drain`. */
function pushRingAll(sink: RawRecordSink, v: DataView, drain: number): void {
  sink.param = OFFSET;
  const ring = ringOf(v);
  let k = 0;
  for (let o = 0; o < ring.byteLength; o += RING_RECORD) {
    sink.pushRing(ring, o + RINGBUF_HDR, PACKET_EVENT_SIZE);
    if (++k % 64 === 0) sink.copyRun();
    if (k % drain === 0) sink.flush();
  }
  sink.flush();
}

/** Records of `v` whose peers hash to `part` of `n` (the worker they go to). */
function ofPartition(v: DataView, part: number, n: number): number {
  let c = 0;
  for (let o = 0; o < v.byteLength; o += PACKET_EVENT_SIZE) if (partitionOf(v, o, PACKET_EVENT_SIZE, RAW_PARTITION_KEY, n) === part) c++;
  return c;
}

/** One worker with a hand-off of two 4 KiB slots, and a source whose decoder module never finishes loading: the worker reads nothing. */
function stuckPool(): { metrics: MetricsRegistry; pool: ReturnType<typeof startPipelineWorkers>; sink: RawRecordSink } {
  const { metrics, module } = moduleOf();
  const pool = startPipelineWorkers({
    workers: 1, module, cache: undefined, remoteContext: true, nodeName: '', metrics, log: silentLogger,
    onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: { consume: () => undefined }, flushMs: 50, shape: { slots: 2, slotBytes: 4096 },
  });
  return { metrics, pool, sink: pool.openRaw({ source: 'stuck', module: 'data:text/javascript,await new Promise(() => {})', options: {} }) };
}

const until = async (what: string, ok: () => boolean, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** 20 000 records counted on this thread (`inThread`), and a pool of two workers counting into `off` (with pod labels). */
function twoWays(seed: number): { v: DataView; inThread: ReturnType<typeof moduleOf>; off: ReturnType<typeof moduleOf>; pool: ReturnType<typeof startPipelineWorkers> } {
  const v = records(20_000, seed);
  const cache = podCache();
  const inThread = moduleOf(podLabels);
  createEnricher(cacheLookup(cache), inThread.module).consume({ source: 'packetparser', flows: decodeAll(v) });
  const off = moduleOf(podLabels);
  const pool = startPipelineWorkers({
    workers: 2, module: off.module, cache, remoteContext: true, nodeName: 'node-0', metrics: off.metrics, log: silentLogger, podLabels,
    onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: { consume: () => undefined }, flushMs: 60_000,
  });
  return { v, inThread, off, pool };
}

describe('pipeline workers', () => {
  it('two workers count exactly what the main thread counts from the same records (pod labels too)', async () => {
    const { v, inThread, off, pool: p } = twoWays(1);
    await using pool = p;
    pushAll(pool.openRaw(ref), v, 2000); // drains of 2000: each fills a slot or two per worker, so the hand-offs never fill
    await pool.flushNow();
    const st = pool.stats();
    assert.equal(st.lostBacklog, 0);
    assert.equal(st.handed, 20_000);
    assert.equal(st.counted, 20_000);
    assert.ok(st.perWorker.every((n) => n > 0), `both workers took records: ${st.perWorker.join(', ')}`);
    const want = await adv(inThread.metrics);
    assert.ok(want.length > 100, `${want.length} series`);
    assert.ok(want.some((l) => l.includes('source_label_app="app-1"')), 'the pod label is on the series');
    assert.deepEqual(await adv(off.metrics), want);
  });

  it('ring runs (each copied whole to both workers, each counting its partitions): the counts equal the main thread\'s', async () => {
    const { v, inThread, off, pool: p } = twoWays(11);
    await using pool = p;
    pushRingAll(pool.openRaw(ref), v, 2000);
    await pool.flushNow();
    const st = pool.stats();
    assert.equal(st.lostBacklog, 0);
    assert.equal(st.counted, 20_000);
    assert.equal(st.handed, 20_000, 'what the workers took of the runs, each record once');
    assert.deepEqual(st.perWorker, [ofPartition(v, 0, 2), ofPartition(v, 1, 2)], 'each worker its partition');
    assert.deepEqual(await adv(off.metrics), await adv(inThread.metrics));
  });

  it('ring runs: a worker that dies loses exactly its partition of what it held; while it is gone the other takes every partition', async () => {
    const { metrics, module } = moduleOf();
    await using pool = startPipelineWorkers({
      workers: 2, module, cache: podCache(), remoteContext: true, nodeName: 'node-0', metrics, log: silentLogger,
      onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: { consume: () => undefined }, flushMs: 60_000, restartMs: 60_000,
    });
    const sink = pool.openRaw(ref);
    const first = records(3000, 12);
    pushRingAll(sink, first, 1000);
    await until('both workers read their hand-offs', () => pool.backlogs().every((b) => b === 0));
    await pool.threads()[0]?.terminate(); // its counts were never handed over
    await until('the exit counted', () => pool.stats().workers === 1);
    assert.equal(pool.stats().lostExit, ofPartition(first, 0, 2), 'its partition of the runs it had read');
    const second = records(2000, 13);
    pushRingAll(sink, second, 500);
    await pool.flushNow();
    const st = pool.stats();
    assert.equal(st.lostBacklog, 0);
    assert.equal(st.counted, 3000 - ofPartition(first, 0, 2) + 2000, 'the survivor counted its part of the first and all of the second');
    const check = moduleOf();
    createEnricher(cacheLookup(podCache()), check.module).consume({
      source: 'packetparser',
      flows: [...decodeAll(first).filter((_, i) => partitionOf(first, i * PACKET_EVENT_SIZE, PACKET_EVENT_SIZE, RAW_PARTITION_KEY, 2) === 1), ...decodeAll(second)],
    });
    assert.deepEqual(await adv(metrics), await adv(check.metrics));
  });

  it('ring runs: a full hand-off refuses the runs without waiting and counts their records; what it held counts at the stop', async () => {
    const { pool, sink } = stuckPool();
    const t0 = performance.now();
    pushRingAll(sink, records(200), 200);
    assert.ok(performance.now() - t0 < 100, 'the pushes did not wait');
    // runs are cut at what a slot holds (31 records of 128 bytes in 4 064): two slots, a run each
    const perSlot = Math.floor((4096 - SLOT_HEADER) / RING_RECORD);
    const st = pool.stats();
    assert.equal(st.lostBacklog, 200 - 2 * perSlot);
    await pool[Symbol.asyncDispose]();
    assert.equal(pool.stats().lostExit, 2 * perSlot, 'what it held when it stopped');
  });

  it('follows the IP cache and the spec: a pod added later is enriched, counts of a replaced spec are not merged', async () => {
    const cache = podCache();
    const { metrics, module } = moduleOf();
    await using pool = startPipelineWorkers({
      workers: 1, module, cache, remoteContext: true, nodeName: 'node-0', metrics, log: silentLogger,
      onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: { consume: () => undefined }, flushMs: 60_000,
    });
    cache.upsertPod({ kind: 'pod', namespace: 'ns-a', name: 'late', ips: ['20.0.0.7'], nodeIP: undefined, labels: {}, annotations: {}, owners: [], workloads: [] });
    await new Promise((r) => setImmediate(r)); // the cache's changes go out once per turn
    const v = records(2000, 7);
    pushAll(pool.openRaw(ref), v, 500);
    await pool.flushNow();
    assert.ok((await adv(metrics)).some((l) => l.includes('podname="late"')), 'the late pod is known to the worker');
    const other = annotationSpec(['ns-b']);
    module.apply(other);
    pushAll(pool.openRaw(ref), v, 500);
    await pool.flushNow();
    const check = moduleOf();
    check.module.apply(other);
    createEnricher(cacheLookup(cache), check.module).consume({ source: 'packetparser', flows: decodeAll(v) });
    assert.deepEqual(await adv(metrics), await adv(check.metrics), 'only the records handed over after the change, under the new spec');
  });

  it('the node pipeline: this thread\'s consumers get the flows in drain order, counted once (by the workers)', async () => {
    const metrics = createMetricsRegistry({ processMetrics: false });
    const got: FlowBatch[] = [];
    await using p = await startNodePipeline({
      agent: testAgentConfig({ enablePodLevel: true, pipelineWorkers: 2, hubble: { ...testAgentConfig().hubble, enabled: true } }),
      metrics, log: silentLogger, watches: undefined, consumers: [{ name: 'hubble', consumer: { consume: (b) => void got.push(b) } }],
    });
    assert.ok(p.flows?.openRaw && p.workers && p.module);
    p.module.apply(spec);
    const sink = p.flows.openRaw(ref);
    assert.ok(sink);
    assert.equal(sink.wantsFlows, true, 'Hubble wants the flows on this thread');
    const v = records(3000, 3);
    const flows = decodeAll(v);
    pushAll(sink, v, 1000);
    for (let i = 0; i < 3; i++) sink.consume({ source: 'packetparser', flows: flows.slice(i * 1000, (i + 1) * 1000) });
    await p.workers.flushNow();
    assert.deepEqual(got.flatMap((b) => b.flows.map((f) => f.timeMs)), flows.map((f) => f.timeMs), 'in drain order');
    const check = moduleOf();
    check.module.consume({ source: 'packetparser', flows: decodeAll(v) });
    assert.deepEqual(await adv(metrics), await adv(check.metrics), 'counted once');
  });

  it('a worker that dies is started again, and the records it held are counted lost', async () => {
    const { metrics, module } = moduleOf();
    await using pool = startPipelineWorkers({
      workers: 1, module, cache: podCache(), remoteContext: true, nodeName: 'node-0', metrics, log: silentLogger,
      onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: { consume: () => undefined }, flushMs: 60_000, restartMs: 50,
    });
    pushAll(pool.openRaw(ref), records(1000), 250);
    await until('the worker read its hand-off', () => pool.backlogs()[0] === 0);
    await pool.threads()[0]?.terminate(); // its counts were never handed over
    await until('the restart', () => pool.stats().restarts === 1 && pool.stats().workers === 1);
    assert.equal(pool.stats().lostExit, 1000);
    assert.match((await metrics.expose()).body, /lost_events_counter\{type="pipeline",reason="worker_exit"\} 1000/);
    const v = records(500, 5);
    pushAll(pool.openRaw(ref), v, 250);
    await pool.flushNow();
    assert.equal(pool.stats().counted, 500);
    const check = moduleOf();
    createEnricher(cacheLookup(podCache()), check.module).consume({ source: 'packetparser', flows: decodeAll(v) });
    assert.deepEqual(await adv(metrics), await adv(check.metrics));
  });

  it('a full hand-off refuses records without waiting, and counts them', async () => {
    const { metrics, pool, sink } = stuckPool();
    const v = records(200);
    const t0 = performance.now();
    for (let o = 0; o < v.byteLength; o += PACKET_EVENT_SIZE) sink.push(v, o, PACKET_EVENT_SIZE);
    sink.flush();
    assert.ok(performance.now() - t0 < 100, 'the pushes did not wait');
    const st = pool.stats();
    const perSlot = Math.floor((4096 - SLOT_HEADER) / (PACKET_EVENT_SIZE + 4));
    assert.equal(st.handed, 2 * perSlot);
    assert.equal(st.lostBacklog, 200 - 2 * perSlot);
    await new Promise((r) => setTimeout(r, 120));
    assert.match((await metrics.expose()).body, new RegExp(`lost_events_counter\\{type="pipeline",reason="worker_backlog"\\} ${200 - 2 * perSlot}\\n`));
    await pool[Symbol.asyncDispose]();
    assert.equal(pool.stats().lostExit, 2 * perSlot, 'what it held when it stopped is counted too');
  });

  it('a decoder module that cannot load: its records count as undecoded, the others go on', async () => {
    const { metrics, module } = moduleOf();
    await using pool = startPipelineWorkers({
      workers: 1, module, cache: podCache(), remoteContext: true, nodeName: 'node-0', metrics, log: silentLogger,
      onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: { consume: () => undefined }, flushMs: 60_000,
    });
    pushAll(pool.openRaw({ source: 'broken', module: 'data:text/javascript,throw new Error("no")', options: {} }), records(300, 2), 300);
    const v = records(500, 3);
    pushAll(pool.openRaw(ref), v, 500);
    await until('both sources read (the broken one once its import failed)', () => pool.backlogs()[0] === 0);
    await pool.flushNow();
    assert.equal(pool.stats().counted, 800);
    assert.match((await metrics.expose()).body, /lost_events_counter\{type="parser",reason="pipeline_worker"\} 300/);
    const check = moduleOf();
    createEnricher(cacheLookup(podCache()), check.module).consume({ source: 'packetparser', flows: decodeAll(v) });
    assert.deepEqual(await adv(metrics), await adv(check.metrics));
  });

  it('workers that cannot start: after five quick failures the flows are counted on the main thread, none lost', async () => {
    const { metrics, module } = moduleOf();
    const fallback = moduleOf();
    await using pool = startPipelineWorkers({
      workers: 1, module, cache: undefined, remoteContext: true, nodeName: 'node-0', metrics, log: silentLogger,
      onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: fallback.module, restartMs: 10,
      workerUrl: new URL('data:text/javascript,process.exit(3)'),
    });
    await until('the workers given up', () => pool.stats().restarts === 4 && pool.stats().workers === 0);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(pool.stats().restarts, 4, 'not started again');
    const sink = pool.openRaw(ref);
    assert.equal(sink.wantsFlows, true, 'no worker: the source decodes here');
    const v = records(800, 4);
    pushAll(sink, v, 200);
    sink.consume({ source: 'packetparser', flows: decodeAll(v) });
    assert.equal(pool.stats().lostBacklog, 0);
    const check = moduleOf();
    check.module.consume({ source: 'packetparser', flows: decodeAll(v) });
    assert.deepEqual(await adv(fallback.metrics), await adv(check.metrics));
  });

  it('stopping hands the last counts over before the workers exit', async () => {
    const v = records(5000, 9);
    const { metrics, module } = moduleOf();
    const pool = startPipelineWorkers({
      workers: 2, module, cache: podCache(), remoteContext: true, nodeName: 'node-0', metrics, log: silentLogger,
      onThread: { consume: () => undefined }, wantsFlows: () => false, fallback: { consume: () => undefined }, flushMs: 60_000,
    });
    const threads = pool.threads();
    const exits = threads.map((w) => new Promise<number>((r) => w?.once('exit', r)));
    pushAll(pool.openRaw(ref), v, 1000);
    await pool[Symbol.asyncDispose]();
    assert.deepEqual(await Promise.all(exits), [0, 0], 'each worker ended on its own');
    assert.equal(pool.stats().counted, 5000);
    assert.equal(pool.stats().lostExit, 0);
    const check = moduleOf();
    createEnricher(cacheLookup(podCache()), check.module).consume({ source: 'packetparser', flows: decodeAll(v) });
    assert.deepEqual(await adv(metrics), await adv(check.metrics));
  });
});
