/**
 * A node for the side-by-side data path benchmarks (per-packet.bench.ts, retina-side.bench.ts): a
 * network namespace standing for the node's host namespace, holding the host ends of pod veths (as a
 * CNI makes them: /32 routes, proxy ARP, forwarding) and an `eth0` with the default route (a veth to
 * the machine's namespace), so an agent run in it sees exactly these veths and nothing of the
 * machine's. The agents reach the test control plane (which listens on the machine's loopback)
 * through a relay in this process on the machine's end of that `eth0` (their kubeconfig names it,
 * without verifying the server's certificate, issued for 127.0.0.1). The
 * pods are registered as Running Pods of that node in a test control plane of our own (with our
 * operator, which installs the CRDs and accepts a MetricsConfiguration of Retina's annotation metric
 * set for their namespace), so both agents' pod-level paths enrich and count their traffic.
 *
 * Subjects: `ours` (bin/retina-agent, pod level on: every Linux eBPF plugin plus linuxutil), `oursOff`
 * (the same without pod level: no packetparser) and `retina` (Retina's controller, built by
 * hack/retina/build.sh, with its chart's plugins plus packetparser, less dropreason (kprobes), `enablePodLevel: true`, local
 * context, `dataAggregationLevel: high` for both). Each runs in a cgroup of its own, in the node's
 * namespace; Retina gets the bpffs its init container mounts (in the private mount namespace `ip netns
 * exec` makes) and the vmlinux.h it writes.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { collectionPath, objectPath, resources } from '../../src/k8s/index.js';
import { AGENT_BIN, agentEnv } from '../../test/e2e/agent-process.js';
import { rssSplit } from '../../test/e2e/proc-stats.js';
import { Netns, sh, sleep, stopAll } from '../../test/ebpf/netns.js';
import { createNamespace, deleteNamespace, eventually, startCluster, type Cluster } from '../../test/integration/harness.js';
import { startOperator, uniqueId } from '../../test/integration/operator-helpers.js';
import { Run, retinaBuild, retinaVmlinuxInclude, type Subject } from '../agent/cgroup-run.js';
import { PodNode, createRunningPod, createUnmanagedNode, metricsConfiguration, output, pktgen } from './pods.js';

const run = promisify(execFile);
export const NODE_NAME = 'bench-side-node';
const NODE_IP = '10.236.0.1';
/** The machine's end of the node's eth0: the default route's gateway and the control plane relay's address. */
const GATEWAY_IP = '10.236.0.2';
const IPERF_PORT = 5201;
const CONN_PORT = 7001;
/** Ours' node-level plugins; BENCH_OURS_PLUGINS (comma-separated) runs a subset, to say what one of them costs. */
const OURS_PLUGINS = process.env['BENCH_OURS_PLUGINS']?.split(',').map((p) => p.trim()).filter(Boolean) ?? ['packetforward', 'dropreason', 'linuxutil', 'dns', 'tcpretrans'];
/**
 * Retina's chart's Linux plugins (deploy/standard values.yaml) plus packetparser, without dropreason:
 * at pod level it always attaches kprobes, and these kernels have none (CONFIG_KPROBES is off; its
 * Init error would stop the agent).
 */
const RETINA_PLUGINS = ['packetforward', 'linuxutil', 'dns', 'packetparser'];

type StartedOperator = Awaited<ReturnType<typeof startOperator>>;

export class NodeBed implements AsyncDisposable {
  readonly work = mkdtempSync(join(tmpdir(), 'rtbench-side-'));
  readonly node: Netns;
  readonly pods: PodNode;
  /** The machine's end of the node's eth0. */
  readonly #uplink = `rs${process.pid % 1000}up`;
  #relay: Server | undefined;
  #kubeconfig = '';
  readonly #servers: ChildProcess[] = [];
  #cluster: Cluster | undefined;
  #operator: StartedOperator | undefined;
  #namespace = '';
  #mc = '';
  /** Why Retina's column is left out, when its agent is not built. */
  retinaMissing: string | undefined;
  #retina: Subject | undefined;

  readonly #bare: boolean;
  private constructor(pods: number, bare: boolean) {
    this.#bare = bare;
    this.node = new Netns('node');
    try {
      if (bare) {
        this.pods = new PodNode(pods, { node: this.node.name, podToPod: true, tag: `rb${process.pid % 1000}`, net: '10.239' });
        return;
      }
      sh('ip', ['link', 'add', this.#uplink, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', this.node.name]);
      sh('sysctl', ['-qw', `net.ipv6.conf.${this.#uplink}.disable_ipv6=1`]);
      sh('ip', ['addr', 'add', `${GATEWAY_IP}/30`, 'dev', this.#uplink]);
      sh('ip', ['link', 'set', this.#uplink, 'up']);
      this.node.run('sysctl', ['-qw', 'net.ipv6.conf.eth0.disable_ipv6=1']);
      this.node.run('ip', ['addr', 'add', `${NODE_IP}/30`, 'dev', 'eth0']);
      this.node.run('ip', ['link', 'set', 'eth0', 'up']);
      this.node.run('ip', ['route', 'add', 'default', 'via', GATEWAY_IP]);
      this.pods = new PodNode(pods, { node: this.node.name, podToPod: true, tag: `rs${process.pid % 1000}` });
    } catch (e) {
      this.node.destroy();
      try { sh('ip', ['link', 'del', this.#uplink]); } catch { /* went with the namespace */ }
      throw e;
    }
  }

  /** The node with `pods` pods registered and accepted for Retina's annotation metric set. */
  static async create(pods = 4): Promise<NodeBed> {
    const bed = new NodeBed(pods, false);
    try {
      await bed.#register();
      const build = retinaBuild();
      if ('missing' in build) bed.retinaMissing = build.missing;
      else bed.#retina = bed.#retinaSubject(build.dir);
      bed.#servers.push(spawn('ip', ['netns', 'exec', bed.server.netns, 'iperf3', '-s', '-p', String(IPERF_PORT)], { stdio: 'ignore' }));
    } catch (e) {
      await bed[Symbol.asyncDispose]();
      throw e;
    }
    return bed;
  }

  /**
   * A bare node beside it: the same pods and servers in a namespace of their own, with no
   * agent and no control plane, for the no-agent runs alternated with an agent's within seconds.
   */
  static bare(pods = 2): NodeBed {
    const bed = new NodeBed(pods, true);
    bed.#servers.push(spawn('ip', ['netns', 'exec', bed.server.netns, 'iperf3', '-s', '-p', String(IPERF_PORT)], { stdio: 'ignore' }));
    return bed;
  }

  get client(): PodNode['pods'][number] {
    return this.pods.pods[0] as PodNode['pods'][number];
  }
  get server(): PodNode['pods'][number] {
    return this.pods.pods[1] as PodNode['pods'][number];
  }

  async #register(): Promise<void> {
    this.#cluster = await startCluster();
    const { client } = this.#cluster;
    this.#namespace = uniqueId('bench-side');
    await createNamespace(client, this.#namespace);
    await createUnmanagedNode(client, NODE_NAME);
    await Promise.all(this.pods.pods.map((p) => createRunningPod(client, this.#namespace, `web-${p.index}`, NODE_NAME, p.ip)));
    this.#operator = await startOperator(this.#cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('bench-side') });
    const op = this.#operator;
    await eventually('operator leading', 30_000, () => op.op.isLeader() && op.op.synced());
    this.#kubeconfig = await this.#relayedKubeconfig(this.#cluster.kubeconfig);
    this.#mc = uniqueId('bench-side');
    await client.request('POST', collectionPath(resources.metricsConfigurations), { body: metricsConfiguration(this.#mc, this.#namespace) });
    await eventually('MetricsConfiguration accepted', 30_000, async () => {
      const o = await client.request<{ status?: { state?: string } }>('GET', objectPath(resources.metricsConfigurations, undefined, this.#mc));
      return o.status?.state === 'Accepted';
    });
  }

  /** The kubeconfig the agents in the node's namespace use: the relay's address, the server's certificate not verified. */
  get kubeconfig(): string {
    if (!this.#kubeconfig) throw new Error('no control plane');
    return this.#kubeconfig;
  }

  /** Relays GATEWAY_IP:<port> to the control plane's 127.0.0.1 port; writes the kubeconfig naming the relay. */
  async #relayedKubeconfig(kubeconfig: string): Promise<string> {
    const text = readFileSync(kubeconfig, 'utf8');
    const m = /server: https:\/\/127\.0\.0\.1:(\d+)/.exec(text);
    if (!m) throw new Error(`${kubeconfig}: no server on 127.0.0.1`);
    const apiPort = Number(m[1]);
    const relay = createServer((c) => {
      const u = connect(apiPort, '127.0.0.1');
      c.pipe(u).pipe(c);
      c.on('error', () => u.destroy());
      u.on('error', () => c.destroy());
    });
    this.#relay = relay;
    await new Promise<void>((resolve, reject) => relay.once('error', reject).listen(0, GATEWAY_IP, resolve));
    const port = (relay.address() as { port: number }).port;
    const file = join(this.work, 'node.kubeconfig');
    writeFileSync(file, text.replace(m[0], `server: https://${GATEWAY_IP}:${port}`).replace(/certificate-authority-data: \S+/, 'insecure-skip-tls-verify: true'));
    return file;
  }

  /** This checkout's agent, pod level on (every Linux eBPF plugin, packetparser included) or off. */
  ours(podLevel: boolean): Subject {
    const plugins = podLevel ? [...OURS_PLUGINS, 'packetparser'] : OURS_PLUGINS;
    return {
      name: podLevel ? 'ours' : 'oursOff', command: [AGENT_BIN], env: agentEnv({ NODE_NAME }),
      config: (port) => [
        'apiServer:', '  host: 127.0.0.1', `  port: ${port}`, 'logLevel: info', `enabledPlugin: [${plugins.join(', ')}]`,
        'metricsIntervalDuration: 10s', `enablePodLevel: ${podLevel}`, 'remoteContext: false', 'dataAggregationLevel: high',
        // BENCH_OURS_CONFIG: more config lines for ours, `;`-separated (e.g. packetParserConntrackMaxEntries: 1048576).
        ...(process.env['BENCH_OURS_CONFIG'] ?? '').split(';').map((l) => l.trim()).filter(Boolean), '',
      ].join('\n'),
      args: (file) => ['--config', file, '--kubeconfig', this.kubeconfig],
    };
  }

  /** Retina's agent, or undefined when it is not built (`retinaMissing` says so). */
  retina(): Subject | undefined {
    return this.#retina;
  }

  #retinaSubject(dir: string): Subject {
    const include = retinaVmlinuxInclude(join(this.work, 'retina-include'));
    return {
      name: 'retina',
      // Its init container mounts the bpffs it pins its filter and conntrack maps in.
      command: ['sh', '-c', 'mount -t bpf bpf /sys/fs/bpf && exec "$@"', 'sh', join(dir, 'controller')],
      env: agentEnv({ KUBECONFIG: this.kubeconfig, RETINA_VMLINUX_HEADER_DIR: include, NODE_NAME, NODE_IP }),
      config: (port) => [
        'apiServer:', '  host: 127.0.0.1', `  port: ${port}`, 'logLevel: info', `enabledPlugin: ${JSON.stringify(RETINA_PLUGINS)}`,
        'metricsInterval: 10s', 'metricsIntervalDuration: 10s', 'enableTelemetry: false', 'enablePodLevel: true',
        'enableConntrackMetrics: false', 'remoteContext: false', 'enableAnnotations: false', 'bypassLookupIPOfInterest: false',
        'dataAggregationLevel: high', 'dataSamplingRate: 1', 'packetParserRingBuffer: disabled', 'filterMapMaxEntries: 255', '',
      ].join('\n'),
      args: (file) => ['--config', file, `--health-probe-bind-address=:${18_081}`, `--metrics-bind-address=:${18_080}`],
    };
  }

  /** GET /metrics of an agent listening on 127.0.0.1:port in the node's namespace ('' until it answers). */
  async metrics(port: number): Promise<string> {
    try {
      return (await run('ip', ['netns', 'exec', this.node.name, 'curl', '-sf', '-m', '5', `http://127.0.0.1:${port}/metrics`], { maxBuffer: 64 << 20 })).stdout;
    } catch {
      return '';
    }
  }

  /**
   * Starts `subject` and waits until it serves metrics and, with pod level, counts the pods' traffic
   * with their names (the pods are in its cache, the pod veths attached, the filter map filled).
   */
  async start(subject: Subject, port: number, podLevel: boolean): Promise<Run> {
    const r = new Run(subject, this.node.name, port, this.work);
    try {
      const probe = podLevel ? spawn('ip', ['netns', 'exec', this.client.netns, 'bash', '-c', `while :; do printf x > /dev/udp/${this.server.ip}/9 2>/dev/null || true; sleep 0.2; done`], { stdio: 'ignore' }) : undefined;
      try {
        await eventually(`${subject.name} serves metrics${podLevel ? ', its forward counts labelled with the pods, hooks on every pod veth' : ''}`, 180_000, async () => {
          r.alive();
          const text = await this.metrics(port);
          if (!podLevel) return text.includes('networkobservability_');
          const labelled = text.split('\n').some((l) => l.startsWith('networkobservability_adv_forward_count{') && l.includes('podname="web-0"'));
          return labelled && this.hooksOnPodVeths(r.proc.pid).length >= 2 * this.pods.pods.length;
        }, 500);
      } finally {
        if (probe) await stopAll([probe]);
      }
      return r;
    } catch (e) {
      const log = r.proc.stderr.slice(-4000);
      await r[Symbol.asyncDispose]();
      throw new Error(`${(e as Error).message}\n${subject.name}'s log, last lines:\n${log}`);
    }
  }

  /**
   * Hooks process `pid` holds on the pods' veths: its TCX links there (fdinfo names the link's
   * ifindex, in the node's namespace), and tc filters on them (tc mode, held by the kernel).
   */
  hooksOnPodVeths(pid: number): string[] {
    const byIndex = new Map<number, string>();
    for (const l of JSON.parse(this.node.run('ip', ['-j', 'link', 'show'])) as { ifindex: number; ifname: string }[]) byIndex.set(l.ifindex, l.ifname);
    const veths = new Set(this.pods.pods.map((p) => p.hostIf));
    const hooks: string[] = [];
    for (const fd of sh('ls', [`/proc/${pid}/fd`]).split('\n').filter(Boolean)) {
      let info = '';
      try { info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'); } catch { continue; }
      const ifindex = /^link_type:\s+tcx$[\s\S]*^ifindex:\s+(\d+)/m.exec(info)?.[1];
      const name = ifindex ? byIndex.get(Number(ifindex)) : undefined;
      if (name && veths.has(name)) hooks.push(`tcx ${name} ${/^attach_type:\s+\d+ \((\w+)\)/m.exec(info)?.[1] ?? '?'}`);
    }
    for (const v of veths) {
      for (const dir of ['ingress', 'egress']) if (this.node.run('tc', ['filter', 'show', 'dev', v, dir]).includes('bpf')) hooks.push(`tc ${v} ${dir}`);
    }
    return hooks;
  }

  /** Packets that entered the node from the pods (rx of the node's veth ends), so far. */
  podPackets(): number {
    return this.pods.pods.reduce((n, p) => n + Number(this.node.run('cat', [`/sys/class/net/${p.hostIf}/statistics/rx_packets`]).trim()), 0);
  }

  /** iperf3 from the client pod to the server pod; the parsed JSON result. */
  async iperf(args: readonly string[]): Promise<IperfResult> {
    for (let attempt = 0; ; attempt++) {
      try {
        const { stdout } = await run('ip', ['netns', 'exec', this.client.netns, 'iperf3', '-c', this.server.ip, '-p', String(IPERF_PORT), '-J', ...args], { maxBuffer: 64 << 20 });
        return JSON.parse(stdout) as IperfResult;
      } catch (e) {
        if (attempt >= 5) throw e;
        await sleep(500); // the server may not listen yet, or is busy finishing the previous test
      }
    }
  }

  /** `rate` short TCP connections/s (0: as fast as one thread can) from the client pod to the server pod for `seconds`. */
  async connections(seconds: number, rate: number): Promise<{ connected: number; failed: number }> {
    const server = spawn('ip', ['netns', 'exec', this.server.netns, pktgen(), 'accept', String(seconds + 3), String(CONN_PORT)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const accepted = output(server);
    await new Promise<void>((resolve, reject) => {
      server.stdout?.once('data', () => resolve());
      server.once('exit', (code) => reject(new Error(`pktgen accept exited ${code}`)));
    });
    const out = await output(spawn('ip', ['netns', 'exec', this.client.netns, pktgen(), 'connect', String(seconds), String(rate), this.server.ip, String(CONN_PORT)], { stdio: ['ignore', 'pipe', 'pipe'] }));
    server.kill('SIGTERM');
    await accepted.catch(() => undefined);
    const m = /connected (\d+) failed (\d+)/.exec(out);
    if (!m) throw new Error(`pktgen connect printed ${out}`);
    return { connected: Number(m[1]), failed: Number(m[2]) };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await stopAll(this.#servers);
    const client = this.#cluster?.client;
    if (client) {
      if (this.#mc) await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, this.#mc)).catch(() => undefined);
      if (this.#namespace) await deleteNamespace(client, this.#namespace).catch(() => undefined);
      await client.request('DELETE', objectPath(resources.nodes, undefined, NODE_NAME)).catch(() => undefined);
    }
    await this.#operator?.[Symbol.asyncDispose]();
    await this.#cluster?.[Symbol.asyncDispose]();
    this.#relay?.close();
    this.pods[Symbol.dispose]();
    this.node.destroy();
    if (!this.#bare) try { sh('ip', ['link', 'del', this.#uplink]); } catch { /* went with the namespace */ }
    rmSync(this.work, { recursive: true, force: true });
  }
}

export interface IperfResult {
  end: {
    sum_received?: { bits_per_second: number };
    sum?: { packets?: number; lost_packets?: number; seconds?: number; bits_per_second: number };
  };
}

/** Ids of every BPF program loaded now. */
export function loadedProgramIds(): Set<number> {
  return new Set((JSON.parse(sh('bpftool', ['-j', 'prog', 'show'])) as { id: number }[]).map((p) => p.id));
}

/**
 * The programs of an agent: those its process holds (program and link fds), and those loaded since
 * `before` (taken just before it started) that no process holds: an agent may close a program's fd
 * once it is attached (Retina's packetforward keeps only its socket, which holds the filter).
 */
export function agentProgramIds(pid: number, before: ReadonlySet<number>): Set<number> {
  const ids = programIdsOf(pid);
  const held = new Set<number>();
  for (const other of sh('ls', ['/proc']).split('\n').filter((d) => /^\d+$/.test(d) && Number(d) !== pid)) {
    try {
      for (const id of programIdsOf(Number(other))) held.add(id);
    } catch { /* gone, or not ours to read */ }
  }
  for (const id of loadedProgramIds()) if (!before.has(id) && !held.has(id)) ids.add(id);
  return ids;
}

/** Ids of the BPF programs `pid` holds (program fds, and the programs of its link fds). */
export function programIdsOf(pid: number): Set<number> {
  const ids = new Set<number>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (!readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('anon_inode:bpf')) continue;
      const info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
      const prog = /^prog_id:\s+(\d+)/m.exec(info);
      if (prog) ids.add(Number(prog[1]));
    } catch { /* closed meanwhile */ }
  }
  return ids;
}

/** Runs and run time (ns) so far of programs `ids`, summed by program name. */
export function runStats(ids: ReadonlySet<number>): Map<string, { runs: number; ns: number }> {
  const out = new Map<string, { runs: number; ns: number }>();
  for (const p of JSON.parse(sh('bpftool', ['-j', 'prog', 'show'])) as { id: number; name?: string; type?: string; run_cnt?: number; run_time_ns?: number }[]) {
    if (!ids.has(p.id)) continue;
    const name = `${p.name ?? p.id} (${p.type ?? '?'})`;
    const t = out.get(name) ?? { runs: 0, ns: 0 };
    t.runs += p.run_cnt ?? 0;
    t.ns += p.run_time_ns ?? 0;
    out.set(name, t);
  }
  return out;
}

/** CPU in cores and RSS in MB of a running agent over a window: call at its start, then `end()`. */
export function usage(r: Run): { end(): { cores: number; rssMB: number } } {
  const c0 = r.cpu();
  const t0 = Date.now();
  return {
    end: () => ({ cores: Number(((r.cpu() - c0) / ((Date.now() - t0) / 1000)).toFixed(3)), rssMB: Number(rssSplit(r.proc.pid).rssMB.toFixed(1)) }),
  };
}

/** One kind of traffic from the client pod to the server pod: what it reached, in `unit`. */
export interface TrafficCase {
  readonly name: string;
  readonly unit: string;
  run(bed: NodeBed, seconds: number): Promise<number>;
}

export const tcpStreams = (n: number): TrafficCase => ({
  name: `tcp${n}`, unit: 'Gbit/s',
  run: async (bed, seconds) => Number((((await bed.iperf(['-t', String(seconds), '-P', String(n)])).end.sum_received?.bits_per_second ?? 0) / 1e9).toFixed(3)),
});

/** 64-byte UDP datagrams as fast as iperf3 sends them: datagrams received per second. */
export const udp64: TrafficCase = {
  name: 'udp64', unit: 'packets/s received',
  run: async (bed, seconds) => {
    const sum = (await bed.iperf(['-t', String(seconds), '-u', '-l', '64', '-b', '0'])).end.sum;
    return Math.round(((sum?.packets ?? 0) - (sum?.lost_packets ?? 0)) / (sum?.seconds ?? seconds));
  },
};

/** Short TCP connections at `rate` new connections/s (0: as many as one thread makes): connections made per second. */
export const shortConnections = (rate: number): TrafficCase => ({
  name: rate ? `conn${rate}` : 'connMax', unit: 'connections/s',
  run: async (bed, seconds) => Math.round((await bed.connections(seconds, rate)).connected / seconds),
});
