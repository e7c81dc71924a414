/**
 * The packetparser tests' world: a "node" namespace routing between pod namespaces (one veth pair
 * each, the node ends named pp-<pod>) and a "world" namespace behind pp-ext (the host interface),
 * IPv4 and IPv6, with permanent neighbour entries so no ARP or ND runs during a test. The plugin
 * runs in the node namespace inside packetparser-harness.js, driven through `Harness`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nodeBinary } from '../e2e/agent-process.js';
import { LineQueue } from './line-queue.js';
import type { PFlow } from './packetparser-harness.js';
import { existsSync } from 'node:fs';
import { Netns, bpfIdsOf, pinNeighbours, progRunStats, requireKernel, scaled, sleep, stopAll, vethPair, type BpfIds } from './netns.js';

export type { PFlow };

/** Fails loudly when the packetparser suites cannot run here: root, BTF and the built BPF objects. */
export function requirePacketparser(): void {
  requireKernel();
  if (!existsSync(new URL('../../../native-linux/packetparser/packetparser.bpf.o', import.meta.url))) throw new Error('native-linux/packetparser/packetparser.bpf.o is missing: run make native');
}

export interface Pod {
  readonly ns: Netns;
  /** The node end of its veth. */
  readonly veth: string;
  readonly ip: string;
  readonly ip6: string;
  readonly gw: string;
}

export class Topology {
  readonly node: Netns;
  readonly world: Pod;
  readonly pods = new Map<string, Pod>();
  readonly #extra: Netns[] = [];
  /** `v6`: give the pods IPv6 too (IPv6 links send neighbour and multicast chatter of their own). */
  constructor(readonly net: number, readonly v6 = true) {
    this.node = new Netns(`pp-node${net}`);
    this.node.run('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    this.node.run('sysctl', ['-qw', 'net.ipv6.conf.all.forwarding=1']);
    this.world = this.#attach('ext', 9);
  }
  /** Adds pod `name` on subnet 10.<net>.<n>.0/24, fd00:<net>:<n>::/64. */
  addPod(name: string, n: number): Pod {
    const p = this.#attach(name, n);
    this.pods.set(name, p);
    return p;
  }
  pod(name: string): Pod {
    const p = this.pods.get(name);
    if (!p) throw new Error(`no pod ${name}`);
    return p;
  }
  #attach(name: string, n: number): Pod {
    const ns = new Netns(`pp-${name}${this.net}`);
    this.#extra.push(ns);
    const veth = `pp-${name}`;
    const ip = `10.${this.net}.${n}.2`;
    const gw = `10.${this.net}.${n}.1`;
    const ip6 = `fd00:${this.net}:${n}::2`;
    const gw6 = `fd00:${this.net}:${n}::1`;
    vethPair(this.node, veth, gw, ns, 'eth0', ip, this.v6 ? [gw6, ip6] : undefined);
    ns.run('ip', ['route', 'add', 'default', 'via', gw]);
    if (this.v6) ns.run('ip', ['-6', 'route', 'add', 'default', 'via', gw6]);
    pinNeighbours(this.node, veth, this.v6 ? [gw, gw6] : [gw], ns, 'eth0', this.v6 ? [ip, ip6] : [ip]);
    return { ns, veth, ip, ip6, gw };
  }
  /** Removes pod `name`: deletes its veth pair (from the node end), then its namespace. */
  removePod(name: string): void {
    const p = this.pod(name);
    this.node.run('ip', ['link', 'del', p.veth]);
    p.ns.destroy();
    this.pods.delete(name);
  }
  destroy(): void {
    for (const ns of this.#extra) ns.destroy();
    this.node.destroy();
  }
}

interface Reply {
  readonly ok: boolean;
  readonly result?: unknown;
  readonly error?: string;
}

/** The plugin, running in `ns` inside packetparser-harness.js. */
export class Harness implements AsyncDisposable {
  readonly child: ChildProcess;
  readonly #replies: LineQueue;
  #stderr = '';
  constructor(readonly ns: Netns) {
    const script = fileURLToPath(new URL('./packetparser-harness.js', import.meta.url));
    this.child = spawn('ip', ['netns', 'exec', ns.name, nodeBinary(), script], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr?.setEncoding('utf8').on('data', (s: string) => (this.#stderr = (this.#stderr + s).slice(-4000)));
    this.#replies = new LineQueue(this.child.stdout as NodeJS.ReadableStream);
  }
  get pid(): number {
    return this.child.pid as number;
  }
  async call<T>(cmd: Record<string, unknown>, timeoutMs = scaled(60_000)): Promise<T> {
    this.child.stdin?.write(`${JSON.stringify(cmd)}\n`);
    const r = JSON.parse(await this.#replies.next(timeoutMs, () => new Error(`harness: no answer to ${String(cmd['op'])}; stderr: ${this.#stderr}`))) as Reply;
    if (!r.ok) throw new Error(`harness ${String(cmd['op'])}: ${r.error ?? '?'}`);
    return r.result as T;
  }
  start(config: Record<string, unknown>, agent: Record<string, unknown>, interest: string[] | null, timing: Record<string, number | boolean> = {}, apiServer?: string[]): Promise<{ status: string[] }> {
    return this.call({ op: 'start', config: { hostInterfaces: [], tcMode: 'auto', conntrackMaxEntries: 65536, ...config }, agent, interest, timing, ...(apiServer ? { apiServer } : {}) });
  }
  flows(): Promise<PFlow[]> {
    return this.call({ op: 'flows' });
  }
  /**
   * The flows that arrive until none came for `quietMs`; before the first one, for `firstMs` (a busy
   * host's first drain can come later than 600 ms after the traffic: the suite once saw no flow at all).
   */
  async settle(quietMs = 600, timeoutMs = scaled(15_000), firstMs = Math.max(quietMs, 2000)): Promise<PFlow[]> {
    const out: PFlow[] = [];
    const deadline = Date.now() + timeoutMs;
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      await sleep(150);
      const f = await this.flows();
      if (f.length) {
        out.push(...f);
        quietSince = Date.now();
      } else if (Date.now() - quietSince >= (out.length ? quietMs : firstMs)) break;
    }
    return out;
  }
  /**
   * The flows that arrive until `done` holds for them all (or `timeoutMs` passed), then those of a quiet
   * window after: for a count the test knows is due, where a stalled guest can pause the drain for longer
   * than `settle`'s quiet window.
   */
  async until(done: (flows: readonly PFlow[]) => boolean, timeoutMs = scaled(60_000)): Promise<PFlow[]> {
    const out: PFlow[] = [];
    const deadline = Date.now() + timeoutMs;
    while (!done(out) && Date.now() < deadline) {
      out.push(...(await this.flows()));
      if (!done(out)) await sleep(150);
    }
    out.push(...(await this.settle(600, scaled(15_000), 600)));
    return out;
  }
  logs(): Promise<{ level: string; msg: string; fields: Record<string, unknown>; at: number }[]> {
    return this.call({ op: 'logs' });
  }
  bpf(): BpfIds {
    return bpfIdsOf(this.pid);
  }
  /** Runs and run time (ns) of the harness's programs so far (after `runstats`), by program name. */
  runStats(): Map<string, { runs: number; ns: number }> {
    return progRunStats(this.pid);
  }
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('close', r));
    this.child.stdin?.end();
    const t = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  }
}

/** The `ip netns exec` argv that runs a Node.js script in `ns` (for the harness's `block`). */
export function nodeArgv(ns: Netns, script: string, args: readonly string[]): string[] {
  return ['ip', 'netns', 'exec', ns.name, nodeBinary(), '--input-type=module', '-e', script, ...args];
}

/** Flows matching `pred`, summed. */
export function total(flows: readonly PFlow[], pred: (f: PFlow) => boolean): { records: number; packets: number; bytes: number } {
  let records = 0;
  let packets = 0;
  let bytes = 0;
  for (const f of flows) {
    if (!pred(f)) continue;
    records++;
    packets += f.packets;
    bytes += f.bytes;
  }
  return { records, packets, bytes };
}

/** The suites' teardown: helpers stopped, the harness ended, the namespaces removed (even if one of those failed). */
export async function tearDown(helpers: readonly ChildProcess[], harness: Harness | undefined, topo: Topology | undefined): Promise<void> {
  try {
    await stopAll(helpers);
    await harness?.[Symbol.asyncDispose]();
  } finally {
    topo?.destroy();
  }
}
