/**
 * Throughput side by side with Retina's own agent, on a node of pods (node-bed.ts: traffic pod to
 * pod through the host ends of two pod veths, the agent in the node's namespace): `none` (no agent),
 * `ours` (every Linux eBPF plugin and linuxutil, pod level on: packetparser on every pod veth) and
 * `retina` (Retina's controller with its chart's plugins plus packetparser, `enablePodLevel: true`;
 * its endpoint watcher attaches packetparser to every veth of its namespace), alternated round by
 * round (A B C, C B A, ...) in one run, BPF run-time statistics off. Cases: iperf3 TCP with 1, 2
 * and 8 streams (Gbit/s), 64-byte UDP as fast as iperf3 sends (datagrams received/s), and short
 * TCP connections as fast as one thread makes them (connections/s). For each case and agent: the
 * median, its ratio to `none`'s median and the median of per-round ratios, and the agent's CPU (cores,
 * its cgroup: everything it started) and RSS (MB) during the case. Goal: ours at least 0.97 of `none`
 * everywhere and above Retina's in every case. Retina's column is left out, with the reason printed,
 * only when its agent is not built. Env: BENCH_SIDE_ROUNDS (4), BENCH_SIDE_SECONDS (5). Needs root,
 * kernel BTF, iperf3, bpftool, clang, the test control plane (built by make).
 */
import { cpus, loadavg, release } from 'node:os';
import { sleep } from '../../test/ebpf/netns.js';
import { median } from './setup.js';
import { envInt } from '../server/summary.js';
import type { Run } from '../agent/cgroup-run.js';
import { NodeBed, shortConnections, tcpStreams, udp64, usage, type TrafficCase } from './node-bed.js';

const ROUNDS = envInt('BENCH_SIDE_ROUNDS', 4);
const SECONDS = envInt('BENCH_SIDE_SECONDS', 5);
const CASES: TrafficCase[] = [tcpStreams(1), tcpStreams(2), tcpStreams(8), udp64, shortConnections(0)];
const PORT = 19_310;

const load0 = loadavg();
await using bed = await NodeBed.create();
const retina = bed.retina();
if (!retina) console.log(JSON.stringify({ name: 'datapath/retina-side', retinaLeftOut: bed.retinaMissing }));
const subjects = ['none', 'ours', ...(retina ? ['retina'] : [])];
/** [subject][case] -> per-round values. */
const got: Record<string, Record<string, { value: number[]; cores: number[]; rssMB: number[] }>> = {};
for (const s of subjects) got[s] = Object.fromEntries(CASES.map((c) => [c.name, { value: [], cores: [], rssMB: [] }]));

for (let r = 0; r < ROUNDS; r++) {
  for (const s of r % 2 ? [...subjects].reverse() : subjects) {
    const agent: Run | undefined = s === 'none' ? undefined : await bed.start(s === 'ours' ? bed.ours(true) : (retina as NonNullable<typeof retina>), PORT, true);
    try {
      await sleep(2000);
      for (const c of CASES) {
        const u = agent ? usage(agent) : undefined;
        const value = await c.run(bed, SECONDS);
        const g = got[s]?.[c.name];
        g?.value.push(value);
        if (u && agent) {
          agent.alive();
          const { cores, rssMB } = u.end();
          g?.cores.push(cores);
          g?.rssMB.push(rssMB);
        }
      }
    } finally {
      await agent?.[Symbol.asyncDispose]();
    }
  }
}

const r3 = (x: number): number => Number(x.toFixed(3));
const table = CASES.map((c) => {
  const base = got['none']?.[c.name]?.value ?? [];
  const row: Record<string, unknown> = { case: c.name, unit: c.unit, none: r3(median(base)) };
  for (const s of subjects.filter((x) => x !== 'none')) {
    const g = got[s]?.[c.name] ?? { value: [], cores: [], rssMB: [] };
    row[s] = {
      median: r3(median(g.value)), ratio: r3(median(g.value) / median(base)),
      pairedRatio: r3(median(g.value.map((v, i) => v / (base[i] as number)))),
      cores: r3(median(g.cores)), rssMB: r3(median(g.rssMB)), each: g.value,
    };
  }
  return row;
});
for (const row of table) console.log(JSON.stringify({ name: 'datapath/retina-side', ...row }));
type Cell = { ratio: number; pairedRatio: number; cores: number; rssMB: number; median: number };
const lines = [
  `| case | none | ${subjects.filter((s) => s !== 'none').map((s) => `${s} ratio (paired) | ${s} CPU cores / RSS MB`).join(' | ')} |`,
  `| --- | --- |${subjects.filter((s) => s !== 'none').map(() => ' --- | --- |').join('')}`,
  ...table.map((row) => `| ${String(row['case'])} | ${String(row['none'])} ${String(row['unit'])} | ${subjects.filter((s) => s !== 'none').map((s) => {
    const x = row[s] as Cell;
    return `${x.ratio} (${x.pairedRatio}) | ${x.cores} / ${x.rssMB}`;
  }).join(' | ')} |`),
];
console.log(lines.join('\n'));
const ours = table.map((row) => row['ours'] as Cell);
console.log(JSON.stringify({
  name: 'datapath/retina-side-goals', rounds: ROUNDS, seconds: SECONDS,
  oursAtLeast097: ours.every((x) => x.ratio >= 0.97),
  ...(retina ? { oursAboveRetina: table.every((row) => (row['ours'] as Cell).ratio > (row['retina'] as Cell).ratio) } : { retinaLeftOut: bed.retinaMissing }),
  kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model,
  loadavgBefore: load0.map((x) => Number(x.toFixed(2))), loadavgAfter: loadavg().map((x) => Number(x.toFixed(2))),
}));
