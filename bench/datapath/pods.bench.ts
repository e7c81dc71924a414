/**
 * The pod-level data plane end to end: 100 pods (network namespaces on veths, as a CNI makes them)
 * registered in a real API server, the agent with packetparser on every pod veth, and 100 000 UDP
 * packets/s from the pods (pktgen, 64-byte datagrams, round-robin over the pods). For each
 * dataAggregationLevel, one JSON line: the agent's CPU (utime + stime over the run, % of one core),
 * lost events (kernel ring and user space), records parsed, and how many packets adv_forward_count
 * accounted for right after the load and once the aggregated reports are in (and how long that took). Goals: agent under 0.5 core, zero lost events. Then iperf3 TCP from one pod to the
 * host, with the agent running packetparser vs the agent without it, alternated (ABBA): goal ratio
 * at least 0.97. The agent runs the default plugins plus packetparser, with the default
 * metricsIntervalDuration (10 s) unless BENCH_METRICS_INTERVAL says otherwise; its CPU is also
 * measured idle (the 100 pods, no load), and during the iperf3 runs; one more run with packetparser
 * and BPF run-time statistics on gives what each of its BPF programs costs in the kernel per run.
 * Env: BENCH_PODS (100), BENCH_PPS (100000), BENCH_PODS_SECONDS (10), BENCH_METRICS_INTERVAL (10s),
 * BENCH_IPERF_ROUNDS (8), BENCH_IPERF_SECONDS (5). Needs root, kernel BTF, iperf3, clang, and the
 * test control plane (built by make).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { enableBpfRunStats } from '../../test/ebpf/run-stats.js';
import { objectPath, collectionPath, resources, type RestClient } from '../../src/k8s/index.js';
import { AGENT_BIN, AgentProcess, agentEnv, get } from '../../test/e2e/agent-process.js';
import { sleep, stopAll } from '../../test/ebpf/netns.js';
import { createNamespace, deleteNamespace, eventually, startCluster } from '../../test/integration/harness.js';
import { startOperator, uniqueId } from '../../test/integration/operator-helpers.js';
import { HookTimes, cpuSeconds, median } from './setup.js';
import { PodNode, SERVICE_IP, createRunningPod, createUnmanagedNode, metricsConfiguration, output } from './pods.js';

const PODS = Number(process.env['BENCH_PODS'] ?? 100);
const PPS = Number(process.env['BENCH_PPS'] ?? 100_000);
const SECONDS = Number(process.env['BENCH_PODS_SECONDS'] ?? 10);
const ROUNDS = Number(process.env['BENCH_IPERF_ROUNDS'] ?? 8);
const IPERF_SECONDS = Number(process.env['BENCH_IPERF_SECONDS'] ?? 5);
const METRICS_INTERVAL = process.env['BENCH_METRICS_INTERVAL'] ?? '10s';
/** How long a load run waits, after the load, for adv_forward_count to account for every packet. */
const ACCOUNT_WAIT_MS = 90_000;
const METRICS_INTERVAL_MS = /^(\d+)s$/.test(METRICS_INTERVAL) ? Number(METRICS_INTERVAL.slice(0, -1)) * 1000 : 10_000;
const NODE = 'bench-pods-node';
const PORT = 9999;
const conditions = { kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model };

await using cluster = await startCluster();
const { client } = cluster;
const ns = uniqueId('bench-pods');
await createNamespace(client, ns);
using node = new PodNode(PODS);
await registerPods(client, ns, node);
await using operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('bench-pods') });
await eventually('operator leading', 30_000, () => operator.op.isLeader() && operator.op.synced());
const mc = uniqueId('bench-pods');
await client.request('POST', collectionPath(resources.metricsConfigurations), { body: metricsConfiguration(mc, ns) });
await eventually('MetricsConfiguration accepted', 30_000, async () => {
  const o = await client.request<{ status?: { state?: string } }>('GET', objectPath(resources.metricsConfigurations, undefined, mc));
  return o.status?.state === 'Accepted';
});

try {
  for (const level of ['high', 'low'] as const) {
    await using agent = await startAgent(`dataAggregationLevel: ${level}\n`);
    console.log(JSON.stringify({ name: `datapath/pods-${level}`, fixture: `${PODS} pods, ${PPS} UDP packets/s of 64 bytes for ${SECONDS} s, packetparser ${level} aggregation, local context, Retina's annotation metric set`, conditions, ...(await loadRun(agent)) }));
  }
  console.log(JSON.stringify({ name: 'datapath/pods-iperf', fixture: `iperf3 TCP from a pod to the host, ${IPERF_SECONDS} s per run, ${ROUNDS} runs each, ABBA`, conditions, ...(await iperfRatio()) }));
} finally {
  await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, mc)).catch(() => undefined);
  await deleteNamespace(client, ns);
  await client.request('DELETE', objectPath(resources.nodes, undefined, NODE)).catch(() => undefined);
}

/** Pods web-<i> bound to NODE, one per pod namespace, with its address. */
async function registerPods(c: RestClient, namespace: string, n: PodNode): Promise<void> {
  await createUnmanagedNode(c, NODE);
  await Promise.all(n.pods.map((p) => createRunningPod(c, namespace, `web-${p.index}`, NODE, p.ip)));
}

interface BenchAgent extends AsyncDisposable {
  readonly proc: AgentProcess;
  readonly port: number;
  metrics(): Promise<string>;
}

async function startAgent(extra: string, plugins = '[packetforward, dropreason, linuxutil, dns, packetparser]', labelled = true): Promise<BenchAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pods-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `apiServer:\n  host: 127.0.0.1\n  port: 0\nenablePodLevel: true\nremoteContext: false\nenabledPlugin: ${plugins}\npacketParserHostInterfaces: []\npacketForwardInterfaces: [lo]\nmetricsIntervalDuration: ${METRICS_INTERVAL}\n${extra}`);
  const proc = new AgentProcess({ command: [AGENT_BIN], args: ['--config', file, '--kubeconfig', cluster.kubeconfig], env: agentEnv({ NODE_NAME: NODE }) });
  const port = await proc.listening(30_000);
  const names = /\[(.*)\]/.exec(plugins)?.[1]?.split(',').map((s) => s.trim()) ?? [];
  for (const p of names) await proc.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === p, `plugin ${p} started`, 60_000);
  const metrics = async (): Promise<string> => (await get(port, '/metrics')).body;
  // Enrichment needs the pods in the agent's cache: wait until a pod's traffic is labelled.
  if (labelled) await untilLabelled(metrics);
  return {
    proc, port, metrics,
    async [Symbol.asyncDispose]() {
      await proc[Symbol.asyncDispose]();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function untilLabelled(metrics: () => Promise<string>): Promise<void> {
  const probe = spawn('ip', ['netns', 'exec', node.pods[0]?.netns as string, 'bash', '-c', `while :; do printf x > /dev/udp/${SERVICE_IP}/${PORT} 2>/dev/null || true; sleep 0.2; done`], { stdio: 'ignore' });
  try {
    await eventually('the agent labels pod traffic', 60_000, async () => (await metrics()).includes(`podname="web-0"`), 500);
  } finally {
    await stopAll([probe]);
  }
}

/** A function declaration: hoisted above the top-level `await using` body, which TypeScript lowers into a try block. */
function sum(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).some(([k, v]) => !line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

async function loadRun(agent: BenchAgent): Promise<Record<string, unknown>> {
  const idle0 = cpuSeconds(agent.proc.pid);
  await sleep(5000);
  const idleCpu = cpuSeconds(agent.proc.pid) - idle0;
  const before = await agent.metrics();
  const sink = await node.sink(SECONDS + 3, PORT);
  const cpu0 = cpuSeconds(agent.proc.pid);
  const t0 = Date.now();
  const sent = Number(/sent (\d+)/.exec(await output(node.send(SECONDS, PPS, 64, PORT)))?.[1] ?? 0);
  const wall = (Date.now() - t0) / 1000;
  const cpu = cpuSeconds(agent.proc.pid) - cpu0;
  const loadEnd = Date.now();
  const received = Number(/received (\d+)/.exec(await output(sink))?.[1] ?? 0);
  // At high aggregation a connection's counts arrive with its reports (conntrackReportInterval,
  // 30 s by default, and the sweep): poll until adv_forward_count accounts for every packet sent.
  const EGRESS = { direction: 'egress' };
  const fwd0 = sum(before, 'networkobservability_adv_forward_count', EGRESS);
  let accounted = 0;
  let accountedAfterS: number | null = null;
  for (;;) {
    accounted = sum(await agent.metrics(), 'networkobservability_adv_forward_count', EGRESS) - fwd0;
    if (accounted >= sent) accountedAfterS = Number(((Date.now() - loadEnd) / 1000).toFixed(1));
    if (accounted >= sent || Date.now() - loadEnd > ACCOUNT_WAIT_MS) break;
    await sleep(500);
  }
  // Kernel ring losses are read every metrics interval.
  await sleep(Math.max(0, METRICS_INTERVAL_MS + 2500 - (Date.now() - loadEnd)));
  const after = await agent.metrics();
  const d = (name: string, labels: Record<string, string> = {}): number => sum(after, name, labels) - sum(before, name, labels);
  return {
    packetsSent: sent, packetsReceived: received, packetsPerSecond: Math.round(sent / wall),
    agentCpuPercentOfOneCore: Number(((cpu / wall) * 100).toFixed(2)),
    agentIdleCpuPercentOfOneCore: Number(((idleCpu / 5) * 100).toFixed(2)),
    metricsIntervalDuration: METRICS_INTERVAL,
    lostEvents: d('controlplane_networkobservability_lost_events_counter'),
    recordsParsed: d('controlplane_networkobservability_parsed_packets_counter'),
    advForwardCountEgress: d('networkobservability_adv_forward_count', EGRESS),
    allPacketsAccountedSecondsAfterLoad: accountedAfterS,
    goal: { agentCpuPercentOfOneCore: 50, lostEvents: 0 },
  };
}

async function iperfRatio(): Promise<Record<string, unknown>> {
  const server = spawn('iperf3', ['-s', '-B', SERVICE_IP, '-p', '5301'], { stdio: 'ignore' });
  const pod = node.pods[0]?.netns as string;
  const run = async (): Promise<number> => {
    for (let attempt = 0; ; attempt++) {
      const child = spawn('ip', ['netns', 'exec', pod, 'iperf3', '-c', SERVICE_IP, '-p', '5301', '-J', '-t', String(IPERF_SECONDS)], { stdio: ['ignore', 'pipe', 'pipe'] });
      try {
        const j = JSON.parse(await output(child)) as { end: { sum_received: { bits_per_second: number } } };
        return j.end.sum_received.bits_per_second;
      } catch (e) {
        if (attempt >= 5) throw e;
        await sleep(500);
      }
    }
  };
  const ON = '[packetforward, dropreason, linuxutil, dns, packetparser]';
  const OFF = '[packetforward, dropreason, linuxutil, dns]';
  try {
    await sleep(500);
    const off: number[] = [];
    const on: number[] = [];
    const cpu = { off: [] as number[], on: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      for (const mode of i % 2 === 0 ? ['off', 'on'] as const : ['on', 'off'] as const) {
        await using agent = await startAgent('dataAggregationLevel: high\n', mode === 'on' ? ON : OFF, mode === 'on');
        const c0 = cpuSeconds(agent.proc.pid);
        const t0 = Date.now();
        (mode === 'on' ? on : off).push(await run());
        cpu[mode].push(((cpuSeconds(agent.proc.pid) - c0) / ((Date.now() - t0) / 1000)) * 100);
      }
    }
    // What the hooks cost in the kernel, from one more run with packetparser and BPF run-time
    // statistics on (they add two clock reads per program run, so the rounds above run without).
    const hooks = new HookTimes();
    {
      using _stats = enableBpfRunStats();
      await using agent = await startAgent('dataAggregationLevel: high\n', ON);
      await run();
      hooks.collect(agent.proc.pid);
    }
    return {
      withoutPacketparserGbps: Number((median(off) / 1e9).toFixed(3)), withPacketparserGbps: Number((median(on) / 1e9).toFixed(3)),
      throughputRatio: Number((median(on) / median(off)).toFixed(4)),
      pairedRatioMedian: Number(median(on.map((x, i) => x / (off[i] as number))).toFixed(4)),
      runsGbps: { off: off.map((x) => Number((x / 1e9).toFixed(3))), on: on.map((x) => Number((x / 1e9).toFixed(3))) },
      agentCpuPercentDuringRuns: { off: cpu.off.map((x) => Number(x.toFixed(1))), on: cpu.on.map((x) => Number(x.toFixed(1))) },
      hooksWithPacketparser: hooks.perProgram(),
      hookCpuPercentOfOneCore: Number(((100 * hooks.seconds()) / IPERF_SECONDS).toFixed(2)),
      goalRatio: 0.97,
    };
  } finally {
    await stopAll([server]);
  }
}
