/**
 * The ring-drain benchmark's producer, run in a worker thread: BPF_PROG_TEST_RUN of ringbench
 * (`perRun` records per run) in chunks, keeping at most `window` records ahead of what the main
 * thread has drained (shared counters), so the ring never overflows and the consumer sets the pace.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { testRunProgram } from '../../src/ffi/linux/index.js';

interface Job {
  readonly progFd: number;
  readonly total: number;
  readonly perRun: number;
  readonly window: number;
  /** [0] produced, [1] consumed (records), as Float64 in a SharedArrayBuffer. */
  readonly shared: SharedArrayBuffer;
}

const job = workerData as Job;
const counters = new Float64Array(job.shared);
const signal = new Int32Array(job.shared, 16, 1);
const packet = new Uint8Array(64);
const chunkRuns = 500;
let produced = 0;
while (produced < job.total) {
  const ahead = produced - (counters[1] as number);
  if (ahead + chunkRuns * job.perRun > job.window) {
    Atomics.wait(signal, 0, Atomics.load(signal, 0), 1);
    continue;
  }
  const runs = Math.min(chunkRuns, Math.ceil((job.total - produced) / job.perRun));
  testRunProgram(job.progFd, packet, runs);
  produced += runs * job.perRun;
  counters[0] = produced;
}
parentPort?.postMessage({ produced });
