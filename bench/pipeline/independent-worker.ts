/**
 * One independent copy of the in-thread pipeline (workers-setup.ts: decode → enrich → count, its own
 * tables), run in a worker thread by workers.bench.ts's "i" modes: with one copy, then two at once,
 * what the same work gives on one and on two of this machine's cores with nothing shared between
 * the copies (no hand-off, no merge, no main thread in the path). Messages: `{ ms, start }` runs
 * from `start` (performance.timeOrigin + now, so the copies start together) for `ms`, and answers
 * `{ records, cpuMs, wallMs }`.
 */
import { parentPort, threadId } from 'node:worker_threads';
import { inThreadPipeline } from './workers-setup.js';

const BATCH = 256;
const p = inThreadPipeline();
let cursor = threadId * 7919; // each copy starts elsewhere in the records
const now = (): number => performance.timeOrigin + performance.now();
parentPort?.on('message', (m: { ms: number; start: number }) => {
  while (now() < m.start) { /* wait for the other copy */ }
  const cpu0 = process.threadCpuUsage();
  const t0 = now();
  const end = t0 + m.ms;
  let records = 0;
  while (now() < end) {
    for (let k = 0; k < 20; k++) p.handle((cursor += BATCH), BATCH);
    records += 20 * BATCH;
  }
  const cpu = process.threadCpuUsage(cpu0);
  parentPort?.postMessage({ records, cpuMs: (cpu.user + cpu.system) / 1000, wallMs: now() - t0 });
});
parentPort?.postMessage({ ready: true });
