/**
 * What every BPF program of an agent costs per packet, from the kernel's own accounting (BPF run-time
 * statistics: run_time_ns / run_cnt per program), on a node of pods (node-bed.ts: the agent in the
 * node's namespace, traffic pod to pod through the host ends of two pod veths), side by side:
 * `oursOff` (our agent, pod level off), `ours` (pod level on: packetparser), `retina` (Retina's own
 * agent with its packetparser, packetforward, dropreason, dns, linuxutil), one after the other on the
 * same veths and the same traffic:
 *  - tcp1: one iperf3 TCP stream; udp64: 64-byte UDP datagrams as fast as iperf3 sends them;
 *  - conn<rate>: short TCP connections (connect, server closes, close) at BENCH_CONN_RATES new
 *    connections/s (0 = as fast as one thread makes them).
 * Prints one JSON line per agent and case (every program's runs, ns per run, runs per packet through
 * the node; all programs' ns per packet (per connection for conn cases); the agent's CPU in cores and
 * RSS in MB, statistics on) and then the table side by side. Retina's column is left out, with the
 * reason printed, only when its agent is not built (RETINA_BUILD_IF_MISSING=no hack/retina/build.sh
 * fails). Env: BENCH_PER_PACKET_SECONDS (5), BENCH_CONN_RATES (1000,5000,0), BENCH_PER_PACKET_AGENTS
 * (a comma-separated subset of oursOff,ours,retina), BENCH_PER_PACKET_CASES (a subset of tcp1,udp64,conn<rate>). Needs root, kernel BTF,
 * iperf3, bpftool, clang, the test control plane (built by make).
 */
import { cpus, loadavg, release } from 'node:os';
import { enableBpfRunStats } from '../../test/ebpf/run-stats.js';
import { sleep } from '../../test/ebpf/netns.js';
import { envInt } from '../server/summary.js';
import { NodeBed, agentProgramIds, loadedProgramIds, runStats, shortConnections, tcpStreams, udp64, usage, type TrafficCase } from './node-bed.js';

const SECONDS = envInt('BENCH_PER_PACKET_SECONDS', 5);
const RATES = (process.env['BENCH_CONN_RATES'] ?? '1000,5000,0').split(',').map((s) => Number(s.trim()));
const ONLY_CASES = process.env['BENCH_PER_PACKET_CASES']?.split(',');
const CASES: TrafficCase[] = [tcpStreams(1), udp64, ...RATES.map(shortConnections)].filter((c) => !ONLY_CASES || ONLY_CASES.includes(c.name));
const PORT = 19_300;

interface Row {
  agent: string;
  case: string;
  reached: number;
  unit: string;
  podPackets: number;
  programs: Record<string, { runs: number; nsPerRun: number; runsPerPacket: number }>;
  nsPerPacket: number;
  nsPerConnection?: number;
  cores: number;
  rssMB: number;
}

const load0 = loadavg();
const rows: Row[] = [];
await using bed = await NodeBed.create();
const retina = bed.retina();
if (!retina) console.log(JSON.stringify({ name: 'datapath/per-packet', retinaLeftOut: bed.retinaMissing }));
const ONLY = process.env['BENCH_PER_PACKET_AGENTS']?.split(',');
const subjects = [{ s: bed.ours(false), podLevel: false }, { s: bed.ours(true), podLevel: true }, ...(retina ? [{ s: retina, podLevel: true }] : [])]
  .filter(({ s }) => !ONLY || ONLY.includes(s.name));
{
  using _stats = enableBpfRunStats();
  for (const { s, podLevel } of subjects) {
    const loaded = loadedProgramIds();
    await using agent = await bed.start(s, PORT, podLevel);
    await sleep(2000);
    const ids = agentProgramIds(agent.proc.pid, loaded);
    for (const c of CASES) {
      const before = runStats(ids);
      const p0 = bed.podPackets();
      const u = usage(agent);
      const reached = await c.run(bed, SECONDS);
      const { cores, rssMB } = u.end();
      agent.alive();
      const podPackets = bed.podPackets() - p0;
      const programs: Row['programs'] = {};
      let ns = 0;
      for (const [name, t] of runStats(ids)) {
        const b = before.get(name) ?? { runs: 0, ns: 0 };
        const runs = t.runs - b.runs;
        ns += t.ns - b.ns;
        if (runs > 0) programs[name] = { runs, nsPerRun: Number(((t.ns - b.ns) / runs).toFixed(1)), runsPerPacket: Number((runs / Math.max(1, podPackets)).toFixed(3)) };
      }
      const row: Row = {
        agent: s.name, case: c.name, reached, unit: c.unit, podPackets, programs,
        nsPerPacket: Number((ns / Math.max(1, podPackets)).toFixed(1)),
        ...(c.name.startsWith('conn') ? { nsPerConnection: Math.round(ns / Math.max(1, reached * SECONDS)) } : {}),
        cores, rssMB,
      };
      rows.push(row);
      console.log(JSON.stringify({ name: 'datapath/per-packet', ...row }));
    }
  }
}

// The table: per agent and program, ns per run (runs per packet) in each case; then every program's ns per packet.
const cell = (r: Row | undefined, prog?: string): string => {
  if (!r) return '-';
  if (!prog) return `${r.nsPerPacket}${r.nsPerConnection !== undefined ? ` (${r.nsPerConnection}/conn)` : ''}`;
  const p = r.programs[prog];
  return p ? `${p.nsPerRun} (${p.runsPerPacket})` : '-';
};
const lines = [`| agent | program | ${CASES.map((c) => c.name).join(' | ')} |`, `| --- | --- |${CASES.map(() => ' --- |').join('')}`];
for (const { s } of subjects) {
  const mine = rows.filter((r) => r.agent === s.name);
  const progs = [...new Set(mine.flatMap((r) => Object.keys(r.programs)))].sort();
  for (const p of progs) lines.push(`| ${s.name} | ${p} | ${CASES.map((c) => cell(mine.find((r) => r.case === c.name), p)).join(' | ')} |`);
  lines.push(`| ${s.name} | **all, ns per packet** | ${CASES.map((c) => cell(mine.find((r) => r.case === c.name))).join(' | ')} |`);
  lines.push(`| ${s.name} | reached | ${CASES.map((c) => String(mine.find((r) => r.case === c.name)?.reached ?? '-')).join(' | ')} |`);
  lines.push(`| ${s.name} | CPU cores / RSS MB | ${CASES.map((c) => { const r = mine.find((x) => x.case === c.name); return r ? `${r.cores} / ${r.rssMB}` : '-'; }).join(' | ')} |`);
}
console.log(lines.join('\n'));
console.log(JSON.stringify({
  name: 'datapath/per-packet-conditions', seconds: SECONDS, connectionRates: RATES, kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model,
  loadavgBefore: load0.map((x) => Number(x.toFixed(2))), loadavgAfter: loadavg().map((x) => Number(x.toFixed(2))),
  retina: retina ? 'measured' : bed.retinaMissing,
}));
