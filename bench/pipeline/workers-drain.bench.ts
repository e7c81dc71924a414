/**
 * Whether the ring drain keeps up at a given producer rate, with the pipeline on the main thread
 * (0 workers) and with 2 workers. The kernel side is modelled, the JavaScript side is the real one
 * (workers-setup.ts): records arrive at `rate` per second of wall time whatever the main thread does
 * (as a BPF program writes them), into a ring of packetparser's default size (8 MiB: 65 536 records
 * of 120 bytes plus the ring's 8-byte header), where what does not fit is lost, as the kernel counts
 * it. The main thread drains as packetparser's reader does: at most 4096 records per turn of the
 * event loop, then a setImmediate; each drain either decodes, enriches and counts on the main thread,
 * or copies into the workers' hand-off. Printed per rate and mode: records lost in the ring, the
 * drain lag (how long the oldest waiting record had waited, at each drain: p50, p99, max), the main
 * thread's busy share, and what the workers could not take (counted, worker_backlog). The libbpf
 * callback per record (about 190 ns here, bench/ebpf) is not in this model: add it to both modes.
 * Env: BENCH_DRAIN_MS (2000), BENCH_RATES ("500000,1000000,2000000").
 */
import { availableParallelism, loadavg } from 'node:os';
import { inThreadPipeline, workersPipeline } from './workers-setup.js';

const RUN_MS = Number(process.env['BENCH_DRAIN_MS'] ?? 2000);
const RATES = (process.env['BENCH_RATES'] ?? '500000,1000000,2000000').split(',').map(Number);
const RING_RECORDS = (8 * 1024 * 1024) / 128;
const MAX_PER_DRAIN = 4096;

const q = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return +(s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0).toFixed(2);
};
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 1));

async function run(handle: (at: number, n: number) => void, rate: number): Promise<{ lost: number; produced: number; lagMs: number[]; busy: number }> {
  let drained = 0;
  let lost = 0;
  let busyMs = 0;
  const lagMs: number[] = [];
  const t0 = performance.now();
  for (;;) {
    const now = performance.now();
    if (now - t0 >= RUN_MS) break;
    const produced = Math.floor((rate * (now - t0)) / 1000);
    let waiting = produced - drained - lost;
    if (waiting > RING_RECORDS) {
      lost += waiting - RING_RECORDS;
      waiting = RING_RECORDS;
    }
    if (waiting === 0) {
      await pause();
      continue;
    }
    lagMs.push((waiting / rate) * 1000);
    const take = Math.min(waiting, MAX_PER_DRAIN);
    handle(drained, take);
    drained += take;
    busyMs += performance.now() - now;
    await turn();
  }
  const produced = Math.floor((rate * (performance.now() - t0)) / 1000);
  return { lost, produced, lagMs, busy: busyMs / (performance.now() - t0) };
}

const inThread = inThreadPipeline();
const two = workersPipeline(2);
await new Promise((r) => setTimeout(r, 300));
const modes = [{ name: '0 workers', handle: inThread.handle }, { name: '2 workers', handle: two.handle }];
for (const m of modes) await run(m.handle, 200_000); // warm-up
const results = [];
const loads: number[] = [];
for (const rate of RATES) {
  for (const m of [...modes, ...[...modes].reverse()]) {
    const backlog0 = two.pool.stats().lostBacklog;
    const r = await run(m.handle, rate);
    if (m.name === '2 workers') await two.pool.flushNow(60_000);
    loads.push(loadavg()[0] as number);
    results.push({
      mode: m.name, rate, produced: r.produced, lostInRing: r.lost, lostShare: +(r.lost / r.produced).toFixed(4),
      drainLagMs: { p50: q(r.lagMs, 0.5), p99: q(r.lagMs, 0.99), max: q(r.lagMs, 1) }, mainBusyShare: +r.busy.toFixed(3),
      ...(m.name === '2 workers' ? { workerBacklogLost: two.pool.stats().lostBacklog - backlog0 } : {}),
    });
  }
}
const st = two.pool.stats();
await two.pool[Symbol.asyncDispose]();
for (const r of results) process.stderr.write(`${r.mode}  ${(r.rate / 1e6).toFixed(1)} M/s  lost in ring ${(100 * r.lostShare).toFixed(1)}%  drain lag p99 ${r.drainLagMs.p99} ms  main busy ${(100 * r.mainBusyShare).toFixed(0)}%${'workerBacklogLost' in r ? `  workers could not take ${r.workerBacklogLost}` : ''}\n`);
console.log(JSON.stringify({
  bench: 'pipeline/workers-drain', ringRecords: RING_RECORDS, maxPerDrain: MAX_PER_DRAIN, runMs: RUN_MS, cores: availableParallelism(),
  loadavg1m: { min: Math.min(...loads), max: Math.max(...loads) }, results,
  workersTotals: { handed: st.handed, counted: st.counted, lostBacklog: st.lostBacklog, lostExit: st.lostExit },
}));
