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
