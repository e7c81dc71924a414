/**
 * Ring-buffer drain into JavaScript: records per second decoded into typed records (tcpretrans's
 * RetransRecord), with zero loss, on the main thread (one core), from a synthetic producer
 * (ringbench via BPF_PROG_TEST_RUN in a worker thread, paced so the ring never overflows). The same
 * run also measures the drain with a bare callback (no decoding) for the ratio, and the event loop's
 * lag (a 5 ms timer's lateness) with drains bounded to maxPerDrain records (the default) against
 * unbounded drains (maxPerDrain Infinity: the reader before bounded slices), alternated ABBA, and the two
 * consumers (records walked in JavaScript, the default, against libbpf's callback per record), ABBA, with
 * the main thread's CPU per record (the drain's own cost; the producer runs in a worker). One JSON line.
 * Env: BENCH_RING_EVENTS (6000000), BENCH_RING_PER_RUN (64). Needs root and kernel BTF.
 */
import { cpus, release } from 'node:os';
import { Worker } from 'node:worker_threads';
import { summarize } from '../server/summary.js';
import { openBpfObject, openRingBuffer, type RecordDecoder } from '../../src/ffi/linux/index.js';
import { decodeRetrans } from '../../src/plugins/linux/tcpretrans/decode.js';

const TOTAL = Number(process.env['BENCH_RING_EVENTS'] ?? 6_000_000);
const PER_RUN = Number(process.env['BENCH_RING_PER_RUN'] ?? 64);
const RING_BYTES = 1 << 26;
const WINDOW = 400_000;

interface Result { events: number; seconds: number; perSecond: number; lost: number; drains: number; cpuSeconds: number; mainCpuNsPerEvent: number; lagMs: number[] }

async function run<T>(decode: RecordDecoder<T>, maxPerDrain?: number, consumer?: 'js' | 'libbpf'): Promise<Result> {
  using obj = openBpfObject('ringbench', { rodata: { per_run: PER_RUN }, maxEntries: { retina_ringbench_events: RING_BYTES } });
  const shared = new SharedArrayBuffer(24);
  const counters = new Float64Array(shared, 0, 2);
  const signal = new Int32Array(shared, 16, 1);
  let consumed = 0;
  let sink = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((r) => (done = r));
  using ring = openRingBuffer(obj.map('retina_ringbench_events'), {
    decode,
    lostMap: obj.map('retina_ringbench_lost'),
    ...(maxPerDrain !== undefined ? { maxPerDrain } : {}),
    ...(consumer ? { consumer } : {}),
    onBatch: (records) => {
      consumed += records.length;
      sink += records.length && records[records.length - 1] ? 1 : 0;
      counters[1] = consumed;
      Atomics.add(signal, 0, 1);
      Atomics.notify(signal, 0);
      if (consumed >= TOTAL) done();
    },
  });
  const lagMs: number[] = [];
  let sampling = true;
  const lagger = (async () => {
    while (sampling) {
      const t = performance.now();
      await new Promise((r) => setTimeout(r, 5));
      lagMs.push(Math.max(0, performance.now() - t - 5));
    }
  })();
  const cpu0 = process.cpuUsage();
  const main0 = process.threadCpuUsage();
  const t0 = process.hrtime.bigint();
  const worker = new Worker(new URL('./ring-producer.js', import.meta.url), {
    workerData: { progFd: obj.program('ringbench_produce').fd, total: TOTAL, perRun: PER_RUN, window: WINDOW, shared },
  });
  worker.on('error', (e) => {
    throw e;
  });
  await finished;
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const main = process.threadCpuUsage(main0);
  sampling = false;
  await lagger;
  await worker.terminate();
  if (sink < 0) throw new Error('unreachable');
  // The worker's CPU is in process.cpuUsage too; report the process total honestly.
  return { events: consumed, seconds, perSecond: consumed / seconds, lost: ring.takeLost(), drains: ring.stats.drains, cpuSeconds: (cpu.user + cpu.system) / 1e6, mainCpuNsPerEvent: ((main.user + main.system) * 1000) / consumed, lagMs };
}

const bare: RecordDecoder<number> = (_v, off) => off;
await run(decodeRetrans); // warm-up (JIT, page faults in the ring)
const decoded = await run(decodeRetrans);
const bareRun = await run(bare);
const slices: Record<'bounded' | 'unbounded', Result[]> = { bounded: [], unbounded: [] };
for (const kind of ['bounded', 'unbounded', 'unbounded', 'bounded'] as const) {
  slices[kind].push(await run(decodeRetrans, kind === 'bounded' ? undefined : Infinity));
}
// The consumer: records walked in JavaScript (the default) against libbpf's callback per record, ABBA.
const consumers: Record<'js' | 'libbpf', Result[]> = { js: [], libbpf: [] };
for (const kind of ['js', 'libbpf', 'libbpf', 'js'] as const) consumers[kind].push(await run(decodeRetrans, undefined, kind));
const consumerFigures = (rs: Result[]) => ({
  decodedPerSecond: rs.map((r) => Math.round(r.perSecond)),
  mainThreadCpuNsPerEvent: rs.map((r) => Number(r.mainCpuNsPerEvent.toFixed(1))),
  lost: rs.reduce((a, r) => a + r.lost, 0),
});
const sliceFigures = (rs: Result[]) => ({
  decodedPerSecond: Math.round(rs.reduce((a, r) => a + r.perSecond, 0) / rs.length),
  eventLoopLagMs: summarize(rs.flatMap((r) => r.lagMs), 2),
  eventsPerDrain: Math.round(rs.reduce((a, r) => a + r.events, 0) / rs.reduce((a, r) => a + r.drains, 0)),
  lost: rs.reduce((a, r) => a + r.lost, 0),
});
console.log(JSON.stringify({
  name: 'ebpf/ring-drain',
  fixture: `ringbench, ${PER_RUN} records of 56 bytes per BPF_PROG_TEST_RUN, ring ${RING_BYTES} bytes, producer paced to ${WINDOW} records ahead`,
  conditions: { kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
  decodedPerSecond: Math.round(decoded.perSecond),
  barePerSecond: Math.round(bareRun.perSecond),
  decodedToBare: Number((decoded.perSecond / bareRun.perSecond).toFixed(3)),
  nsPerDecodedEvent: Number((1e9 / decoded.perSecond).toFixed(1)),
  events: decoded.events,
  lost: decoded.lost + bareRun.lost,
  drains: decoded.drains,
  eventsPerDrain: Math.round(decoded.events / decoded.drains),
  goalDecodedPerSecond: 3_000_000,
  boundedDrains: sliceFigures(slices.bounded),
  unboundedDrains: sliceFigures(slices.unbounded),
  jsConsumer: consumerFigures(consumers.js),
  libbpfConsumer: consumerFigures(consumers.libbpf),
}));
