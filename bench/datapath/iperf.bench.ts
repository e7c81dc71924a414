/**
 * Datapath overhead: iperf3 TCP over a veth pair between two namespaces, without the agent and with
 * all four eBPF plugins attached (packetforward's tc programs on the client's veth, dropreason's
 * and tcpretrans's tracepoints, dns's socket filter), alternated in one run (ABBA order). Prints one
 * JSON line with the throughput ratio (goal: at least 0.98), and what the hooks cost in the kernel
 * (BPF run-time statistics: runs and ns per run per program). Env: BENCH_IPERF_ROUNDS (4),
 * BENCH_IPERF_SECONDS (5). Needs root, kernel BTF, iperf3.
 */
import { cpus, release } from 'node:os';
import { enableBpfRunStats } from '../../test/ebpf/run-stats.js';
import { Bed, HookTimes, median } from './setup.js';

const ROUNDS = Number(process.env['BENCH_IPERF_ROUNDS'] ?? 4);
const SECONDS = Number(process.env['BENCH_IPERF_SECONDS'] ?? 5);

await using bed = new Bed();
// The kernel's per-program run time (held by an fd for this run only): what our hooks cost per packet.
using _stats = enableBpfRunStats();
const hookTime = new HookTimes();
const bps = (r: Record<string, unknown>): number => ((r['end'] as { sum_received: { bits_per_second: number } }).sum_received.bits_per_second);
bed.iperf(['-t', '1']); // warm-up
const off: number[] = [];
const on: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const order = i % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
  for (const mode of order) {
    if (mode === 'off') {
      off.push(bps(bed.iperf(['-t', String(SECONDS)])));
    } else {
      await using agent = await bed.agent();
      on.push(bps(bed.iperf(['-t', String(SECONDS)])));
      hookTime.collect(agent.proc.pid);
    }
  }
}
const ratio = median(on) / median(off);
// Runs i of each mode are adjacent (ABBA), so their ratio cancels slow drift on a shared machine.
const paired = median(on.map((x, i) => x / (off[i] as number)));
console.log(JSON.stringify({
  name: 'datapath/iperf',
  fixture: `iperf3 TCP, ${SECONDS} s per run, ${ROUNDS} runs each, ABBA order, veth pair between two namespaces`,
  conditions: { kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model, plugins: ['packetforward', 'dropreason', 'dns', 'tcpretrans'] },
  baselineGbps: Number((median(off) / 1e9).toFixed(3)),
  withPluginsGbps: Number((median(on) / 1e9).toFixed(3)),
  throughputRatio: Number(ratio.toFixed(4)),
  pairedRatioMedian: Number(paired.toFixed(4)),
  runsGbps: { off: off.map((x) => Number((x / 1e9).toFixed(3))), on: on.map((x) => Number((x / 1e9).toFixed(3))) },
  hooks: hookTime.perProgram(),
  hookCpuPercentOfOneCore: Number(((100 * hookTime.seconds()) / (on.length * SECONDS)).toFixed(2)),
  goalRatio: 0.98,
}));
