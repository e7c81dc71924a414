/**
 * Kernel timestamps to wall-clock time. BPF programs stamp records with bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC, which is what process.hrtime reads); a flow's timeMs is wall-clock ms. The
 * offset between the two is taken once and refreshed with `resync()` (the plugins do it every
 * metrics interval), so converting a record costs one addition, not a clock read per flow.
 */
export interface KernelClock {
  /** Wall-clock ms of a CLOCK_MONOTONIC timestamp in ns. */
  toMs(ns: number): number;
  /** Takes the offset again (the wall clock may have been stepped or slewed). */
  resync(): void;
  /** Wall-clock ms at CLOCK_MONOTONIC 0 (what a pipeline worker's decoder is handed). */
  offsetMs(): number;
}

/** Wall-clock ms at CLOCK_MONOTONIC 0, as this process sees it now. */
export function monotonicOffsetMs(): number {
  return Date.now() - Number(process.hrtime.bigint()) / 1e6;
}

/** A clock with a fixed offset (`offsetMs` wall-clock ms at monotonic 0) for tests, or the process's own. */
export function kernelClock(offsetMs?: number): KernelClock {
  let offset = offsetMs ?? monotonicOffsetMs();
  return {
    toMs: (ns) => offset + ns / 1e6,
    resync: () => {
      if (offsetMs === undefined) offset = monotonicOffsetMs();
    },
    offsetMs: () => offset,
  };
}
