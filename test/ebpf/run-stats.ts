/**
 * The kernel's per-program run-time statistics (run_cnt, run_time_ns in `bpftool prog show`) for the
 * eBPF tests and the datapath benchmarks, which read what the programs cost; the agent never turns
 * them on. Through libbpf's bpf_enable_stats (src/ffi/linux/libbpf.ts's binding).
 */
import { errnoText, loadLibbpf } from '../../src/ffi/linux/libbpf.js';
import { loadSys } from '../../src/ffi/linux/sys.js';

/** Turns the statistics on until disposed (BPF_ENABLE_STATS: held by an fd, so nothing stays on if the process dies). */
export function enableBpfRunStats(): Disposable {
  const fd = loadLibbpf().enableStats(0) as number; // BPF_STATS_RUN_TIME
  if (fd < 0) throw new Error(`BPF_ENABLE_STATS failed: ${errnoText(-fd)}`);
  return { [Symbol.dispose]: () => loadSys().close(fd) };
}
