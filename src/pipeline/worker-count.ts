/**
 * How many pipeline workers `pipelineWorkers` means on this machine. `auto`: one core is left to
 * the main thread (ring drains, Hubble, exporters, the HTTP server), the others count, up to
 * AUTO_MAX (one ring drained by one thread feeds about that many workers: docs/architecture.md);
 * with 2 cores or fewer, none (bench/pipeline/README.md: the drain and the workers then share the cores).
 */
import { availableParallelism } from 'node:os';

export const AUTO_MAX = 4;

export function resolvePipelineWorkers(setting: number | 'auto', cores: number = availableParallelism()): number {
  if (setting !== 'auto') return setting;
  return cores <= 2 ? 0 : Math.min(cores - 1, AUTO_MAX);
}

/**
 * Whether this process was started from a start-up snapshot (the image's agent: `--snapshot-blob`):
 * in Node 22 a worker thread started there aborts the whole process ("Assertion failed:
 * shutdown_wrap_template_.IsEmpty()", seen with the agent's snapshot; a minimal snapshot whose worker
 * loads node:v8 does the same), so the pipeline then runs without workers.
 */
export function startedFromSnapshot(execArgv: readonly string[] = process.execArgv): boolean {
  return execArgv.some((a) => a === '--snapshot-blob' || a.startsWith('--snapshot-blob='));
}
