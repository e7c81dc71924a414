/**
 * Throughput side by side with Retina's own agent, on a node of pods (node-bed.ts: traffic pod to
 * pod through the host ends of two pod veths, the agent in the node's namespace): `ours` (every
 * Linux eBPF plugin and linuxutil, pod level on: packetparser on every pod veth) and `retina`
 * (Retina's controller with its chart's plugins plus packetparser, less dropreason, `enablePodLevel:
 * true`; its endpoint watcher attaches packetparser to every veth of its namespace), one agent at a
 * time, alternated round by round (A B, B A, ...), BPF run-time statistics off. The baseline, `none`,
 * is the same traffic between the same kind of pods on a bare node beside it (a namespace no agent
 * runs in), alternated with the agent's node run by run (A B B A, BENCH_SIDE_PAIRS times per case),
 * so a ratio compares runs seconds apart: on a shared machine, load that moves by the minute would
 * otherwise swamp a few percent. (The agents' tracepoint programs, ours' dropreason and tcpretrans,
 * see the bare node's drops and retransmissions too: what they cost falls on both sides.)
 * Cases: iperf3 TCP with 1, 2 and 8 streams (Gbit/s), 64-byte UDP as fast as iperf3 sends (datagrams
 * received/s), and short TCP connections as fast as one thread makes them (connections/s). For each
 * case and agent: the median of the agent's runs and of the bare node's, the ratio of medians and the
 * median of run-pair ratios, the agent's CPU (cores, its cgroup: everything it started) and RSS (MB)
 * over its runs of the case. Goal: ours at least 0.97 everywhere and above Retina's in every case.
 * Retina's column is left out, with the reason printed, only when its agent is not built.
 * Env: BENCH_SIDE_ROUNDS (2 per agent), BENCH_SIDE_PAIRS (2), BENCH_SIDE_SECONDS (3), BENCH_SIDE_AGENTS
 * (ours,retina; oursOff adds ours without pod level), BENCH_SIDE_CASES (a subset of tcp1,tcp2,tcp8,udp64,connMax). Needs root,
 * kernel BTF, iperf3, bpftool, clang, the test control plane (built by make).
 */
import { cpus, loadavg, release } from 'node:os';
import { sleep } from '../../test/ebpf/netns.js';
import { median } from './setup.js';
import { envInt } from '../server/summary.js';
import { NodeBed, shortConnections, tcpStreams, udp64, usage, type TrafficCase } from './node-bed.js';

const ROUNDS = envInt('BENCH_SIDE_ROUNDS', 2);
const PAIRS = envInt('BENCH_SIDE_PAIRS', 2);
const SECONDS = envInt('BENCH_SIDE_SECONDS', 3);
const ALL_CASES: TrafficCase[] = [tcpStreams(1), tcpStreams(2), tcpStreams(8), udp64, shortConnections(0)];
const pick = process.env['BENCH_SIDE_CASES']?.split(',').map((c) => c.trim()).filter(Boolean);
const CASES = pick ? ALL_CASES.filter((c) => pick.includes(c.name)) : ALL_CASES;
if (!CASES.length) throw new Error(`BENCH_SIDE_CASES: none of ${String(pick)} is a case (${ALL_CASES.map((c) => c.name).join(', ')})`);
const PORT = 19_310;

const load0 = loadavg();
await using bed = await NodeBed.create();
await using bare = NodeBed.bare();
const retina = bed.retina();
if (!retina) console.log(JSON.stringify({ name: 'datapath/retina-side', retinaLeftOut: bed.retinaMissing }));
// BENCH_SIDE_AGENTS: which agents, of ours, retina and oursOff (ours without pod level: what the
// node-level hooks alone cost); ours is always measured (the goals are its).
const wanted = (process.env['BENCH_SIDE_AGENTS'] ?? 'ours,retina').split(',').map((a) => a.trim());
const agents = ['ours', ...(retina && wanted.includes('retina') ? ['retina'] : []), ...(wanted.includes('oursOff') ? ['oursOff'] : [])];
/** Agents alternated round by round: A B, B A (A B C, C B A with three). */
const order = [...agents.keys(), ...[...agents.keys()].reverse()];
type Got = { agent: number[]; none: number[]; cores: number[]; rssMB: number[] };
/** [agent][case] */
const got: Record<string, Record<string, Got>> = {};
for (const a of agents) got[a] = Object.fromEntries(CASES.map((c) => [c.name, { agent: [], none: [], cores: [], rssMB: [] }]));

for (let r = 0; r < ROUNDS * agents.length; r++) {
  const name = agents[order[r % order.length] as number] as string;
  const subject = name === 'ours' ? bed.ours(true) : name === 'oursOff' ? bed.ours(false) : (retina as NonNullable<typeof retina>);
  await using agent = await bed.start(subject, PORT, name !== 'oursOff');
  await sleep(2000);
  for (const c of CASES) {
    const g = got[name]?.[c.name] as Got;
    for (let k = 0; k < PAIRS; k++) {
      for (const side of k % 2 ? ['none', 'agent'] as const : ['agent', 'none'] as const) {
        if (side === 'none') {
          g.none.push(await c.run(bare, SECONDS));
          continue;
        }
        const u = usage(agent);
        g.agent.push(await c.run(bed, SECONDS));
        agent.alive();
        const { cores, rssMB } = u.end();
        g.cores.push(cores);
        g.rssMB.push(rssMB);
      }
    }
  }
}

const r3 = (x: number): number => Number(x.toFixed(3));
type Cell = { median: number; none: number; ratio: number; pairedRatio: number; cores: number; rssMB: number };
const table = CASES.map((c) => {
  const row: Record<string, unknown> = { case: c.name, unit: c.unit };
  for (const a of agents) {
    const g = got[a]?.[c.name] as Got;
    const cell: Cell = {
      median: r3(median(g.agent)), none: r3(median(g.none)), ratio: r3(median(g.agent) / median(g.none)),
      pairedRatio: r3(median(g.agent.map((v, i) => v / (g.none[i] as number)))),
      cores: r3(median(g.cores)), rssMB: r3(median(g.rssMB)),
    };
    row[a] = { ...cell, each: g.agent, noneEach: g.none };
  }
  return row;
});
for (const row of table) console.log(JSON.stringify({ name: 'datapath/retina-side', ...row }));
const lines = [
  `| case | ${agents.map((a) => `${a} vs none | ratio (paired) | ${a} CPU cores / RSS MB`).join(' | ')} |`,
  `|${agents.map(() => ' --- | --- | --- |').join('')} --- |`,
  ...table.map((row) => `| ${String(row['case'])} | ${agents.map((a) => {
    const x = row[a] as Cell;
    return `${x.median} vs ${x.none} ${String(row['unit'])} | ${x.ratio} (${x.pairedRatio}) | ${x.cores} / ${x.rssMB}`;
  }).join(' | ')} |`),
];
console.log(lines.join('\n'));
const cell = (row: Record<string, unknown>, a: string): Cell => row[a] as Cell;
console.log(JSON.stringify({
  name: 'datapath/retina-side-goals', rounds: ROUNDS, pairs: PAIRS, seconds: SECONDS,
  oursAtLeast097: table.every((row) => cell(row, 'ours').pairedRatio >= 0.97),
  ...(agents.includes('retina') ? { oursAboveRetina: table.every((row) => cell(row, 'ours').pairedRatio > cell(row, 'retina').pairedRatio) } : { retinaLeftOut: bed.retinaMissing ?? 'not asked (BENCH_SIDE_AGENTS)' }),
  kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model,
  loadavgBefore: load0.map((x) => Number(x.toFixed(2))), loadavgAfter: loadavg().map((x) => Number(x.toFixed(2))),
}));
