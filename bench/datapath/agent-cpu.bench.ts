/**
 * Agent CPU at 100 000 packets/s through the hooks: iperf3 UDP (64-byte datagrams at 51.2 Mbit/s)
 * leaves the client namespace through the veth where packetforward's tc programs sit, past dns's
 * socket filter, with dropreason and tcpretrans attached; the agent's utime + stime over the run.
 * Also reports the packet rate the hooks saw (packetforward's counters), and the same load sent to
 * UDP port 53 (every packet copied to dns's ring buffer and parsed: the worst case). Env:
 * BENCH_CPU_SECONDS (10).
 */
import { cpus, release } from 'node:os';
import { metric, sleep } from '../../test/ebpf/netns.js';
import { Bed, cpuSeconds } from './setup.js';

const SECONDS = Number(process.env['BENCH_CPU_SECONDS'] ?? 10);
const PPS = 100_000;

await using bed = new Bed();
await using agent = await bed.agent('enabledPlugin: [packetforward, dropreason, dns, tcpretrans]\nmetricsIntervalDuration: 1s\n');
await sleep(2000);
const egress = () => metric(agent.metrics(), 'networkobservability_forward_count', { direction: 'egress' });

/** One measured run: packets seen by the hooks, agent CPU. */
function measure(extra: readonly string[]): { sent: number; seen: number; pps: number; cpuSeconds: number; cpuPercent: number } {
  const pkts0 = egress();
  const cpu0 = cpuSeconds(agent.proc.pid);
  const t0 = Date.now();
  const r = bed.iperf(['-u', '-l', '64', '-b', String(PPS * 64 * 8), '-t', String(SECONDS), ...extra]);
  const wall = (Date.now() - t0) / 1000;
  const cpu = cpuSeconds(agent.proc.pid) - cpu0;
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
  const seen = egress() - pkts0;
  return {
    sent: (r['end'] as { sum: { packets: number } }).sum.packets, seen, pps: Math.round(seen / wall),
    cpuSeconds: Number(cpu.toFixed(3)), cpuPercent: Number(((cpu / wall) * 100).toFixed(2)),
  };
}

// Ordinary traffic: counted in the kernel (tc, tracepoints); dns's filter looks and lets it go.
const plain = measure([]);
// Worst case for dns: every packet is UDP port 53, so every packet is copied to the ring and parsed.
const dnsPort = measure(['-p', '53']);
console.log(JSON.stringify({
  name: 'datapath/agent-cpu',
  fixture: `iperf3 UDP, 64-byte datagrams at ${PPS} packets/s for ${SECONDS} s, all four eBPF plugins; then the same to UDP port 53`,
  conditions: { kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model },
  packetsPerSecond: plain.pps,
  agentCpuPercentOfOneCore: plain.cpuPercent,
  datagramsSent: plain.sent,
  packetsSeenByHooks: plain.seen,
  port53: { packetsPerSecond: dnsPort.pps, agentCpuPercentOfOneCore: dnsPort.cpuPercent, datagramsSent: dnsPort.sent },
}));
