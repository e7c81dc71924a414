/**
 * Network namespaces and veth pairs for the eBPF tests (names prefixed rtbpf-), commands run inside
 * them, the agent run inside one, and its /metrics scraped from inside it. Nothing here skips:
 * without root or kernel BTF, `requireKernel()` throws.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_BIN, AgentProcess, agentEnv, eventually, nodeBinary } from '../e2e/agent-process.js';

/** Fails loudly when the eBPF tests cannot run here. */
export function requireKernel(): void {
  if (process.getuid?.() !== 0) throw new Error('the eBPF tests need root (run them as root: they create namespaces and load BPF)');
  if (!existsSync('/sys/kernel/btf/vmlinux')) throw new Error('the eBPF tests need kernel BTF at /sys/kernel/btf/vmlinux');
  for (const o of ['packetforward', 'dropreason', 'dns', 'tcpretrans']) {
    if (!existsSync(new URL(`../../../native-linux/${o}/${o}.bpf.o`, import.meta.url))) throw new Error(`native-linux/${o}/${o}.bpf.o is missing: run make native`);
  }
}

/**
 * How much slower than this machine's own kernel the suite runs: 1 natively, more inside a kernel the
 * matrix boots under qemu's TCG (hack/kernels), which runs every instruction 10-50 times slower and
 * shares the host's cores with the other lanes. The waits below for a condition (an agent started, a
 * count settled, an exit) are bounded by their timeouts times this; what they wait for is unchanged.
 */
export const TIME_SCALE = Math.max(1, Number(process.env['RETINA_TEST_TIME_SCALE']) || 1);
export const scaled = (ms: number): number => ms * TIME_SCALE;

export function sh(cmd: string, args: readonly string[], input?: string): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], ...(input !== undefined ? { input } : {}) });
}

/** Runs a Node.js script (ES module text) in network namespace `ns`; resolves with its stdout, rejects with its stderr. */
export function nodeInNetns(ns: string, script: string, args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', ns, nodeBinary(), '--input-type=module', '-e', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`node in ${ns} exited ${code}: ${err}`));
    });
  });
}

export class Netns {
  static #seq = 0;
  readonly name: string;
  constructor(tag: string) {
    this.name = `rtbpf-${tag}-${process.pid % 10000}-${Netns.#seq++}`;
    sh('ip', ['netns', 'add', this.name]);
    this.run('ip', ['link', 'set', 'lo', 'up']);
  }
  run(cmd: string, args: readonly string[], input?: string): string {
    // `ip -n` for ip itself: it enters the namespace without `ip netns exec`'s private mount namespace and
    // /sys remount (seconds per topology under qemu's TCG on 5.10).
    if (cmd === 'ip') return sh('ip', ['-n', this.name, ...args], input);
    return sh('ip', ['netns', 'exec', this.name, cmd, ...args], input);
  }
  /** Runs a Node.js script in this namespace; resolves with its stdout. */
  node(script: string, args: readonly string[] = [], timeoutMs = 60_000): Promise<string> {
    return nodeInNetns(this.name, script, args, timeoutMs);
  }
  /** Starts a long-running Node.js script in this namespace (killed by the caller). */
  spawnNode(script: string, args: readonly string[] = []): ChildProcess {
    const child = spawn('ip', ['netns', 'exec', this.name, nodeBinary(), '--input-type=module', '-e', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#children.push(child);
    return child;
  }
  readonly #children: ChildProcess[] = [];
  /**
   * /proc/net/<file> of this namespace (dev, snmp, ...), read through a live process of ours in it (`ip netns
   * exec` execs into the command: its pid's /proc/<pid>/net is the namespace's) when there is one, so a poll
   * starts no process: under qemu's TCG each `ip netns exec cat` costs a fraction of a second of a guest's CPU.
   */
  netFile(file: string): string {
    let ino = NaN;
    try {
      ino = statSync(`/run/netns/${this.name}`).ino;
    } catch {
      /* read it the slow way below */
    }
    for (const c of this.#children) {
      if (c.exitCode !== null || c.signalCode !== null || !c.pid) continue;
      try {
        // The namespace check: before `ip` has entered it, the child is still in ours.
        if (readlinkSync(`/proc/${c.pid}/ns/net`) !== `net:[${ino}]`) continue;
        return readFileSync(`/proc/${c.pid}/net/${file}`, 'utf8');
      } catch {
        /* gone meanwhile: try the next */
      }
    }
    return this.run('cat', [`/proc/net/${file}`]);
  }
  /** An interface's rx/tx packets and bytes, from this namespace's /proc/net/dev (`netFile`). */
  ifCounters(ifname: string): { rxBytes: number; rxPackets: number; txBytes: number; txPackets: number } {
    const line = this.netFile('dev').split('\n').find((l) => l.trim().startsWith(`${ifname}:`));
    if (!line) throw new Error(`no interface ${ifname} in ${this.name}'s /proc/net/dev`);
    const f = line.slice(line.indexOf(':') + 1).trim().split(/\s+/).map(Number);
    return { rxBytes: f[0] as number, rxPackets: f[1] as number, txBytes: f[8] as number, txPackets: f[9] as number };
  }
  /** `spawnNode`, resolved once the script wrote its first output (a server's "ready"). */
  async spawnReady(script: string, args: readonly string[] = []): Promise<ChildProcess> {
    const child = this.spawnNode(script, args);
    await new Promise((r) => child.stdout?.once('data', r));
    return child;
  }
  /** One counter of an interface in this namespace (/sys/class/net/<if>/statistics/<stat>). */
  ifStat(ifname: string, stat: string): number {
    return Number(this.run('cat', [`/sys/class/net/${ifname}/statistics/${stat}`]).trim());
  }
  destroy(): void {
    try {
      sh('ip', ['netns', 'del', this.name]);
    } catch {
      /* already gone */
    }
  }
}

/** A veth pair a (in `na`, address `ipA`/24) <-> b (in `nb`, `ipB`/24), both up; IPv6 only when `v6` gives addresses (/64). */
export function vethPair(na: Netns, a: string, ipA: string, nb: Netns, b: string, ipB: string, v6?: readonly [string, string]): void {
  sh('ip', ['link', 'add', a, 'netns', na.name, 'type', 'veth', 'peer', 'name', b, 'netns', nb.name]);
  na.run('ip', ['addr', 'add', `${ipA}/24`, 'dev', a]);
  nb.run('ip', ['addr', 'add', `${ipB}/24`, 'dev', b]);
  for (const [n, i, six] of [[na, a, v6?.[0]], [nb, b, v6?.[1]]] as const) {
    // No IPv6 autoconfiguration chatter on links that do not need IPv6.
    if (six === undefined) n.run('sysctl', ['-qw', `net.ipv6.conf.${i}.disable_ipv6=1`]);
    else n.run('ip', ['-6', 'addr', 'add', `${six}/64`, 'dev', i, 'nodad']);
    n.run('ip', ['link', 'set', i, 'up']);
  }
}

/** nftables rules dropping UDP to port 9999 on input (table `table`): each datagram sent there is one dropreason drop. */
export const dropUdp9999 = (table: string): string => `table inet ${table} {\n chain input {\n  type filter hook input priority 0;\n  udp dport 9999 drop\n }\n}\n`;

/**
 * The drop tests' pair: namespaces `<name>-a` and `<name>-b` on a veth pair (`<ifname>0`,
 * `<net>.1` <-> `<ifname>1`, `<net>.2`), `a` dropping UDP to port 9999. Both destroyed when setup fails.
 */
export function droppingPair(name: string, ifname: string, net: string): { a: Netns; b: Netns } {
  const a = new Netns(`${name}-a`);
  let b: Netns | undefined;
  try {
    b = new Netns(`${name}-b`);
    vethPair(a, `${ifname}0`, `${net}.1`, b, `${ifname}1`, `${net}.2`);
    a.run('nft', ['-f', '-'], dropUdp9999(ifname));
    return { a, b };
  } catch (e) {
    b?.destroy();
    a.destroy();
    throw e;
  }
}

/** The body of the agent's /readyz. */
export interface Readiness {
  readonly status: string;
  readonly plugins: readonly { name: string; state: string; lastError?: string; failures: number; degraded?: Record<string, string> }[];
}

/** The agent, run in `ns` with `config` (YAML), listening on a free port on loopback. */
export class NsAgent implements AsyncDisposable {
  readonly proc: AgentProcess;
  readonly #dir: string;
  port = 0;
  /** `command`: how to start the agent (the checkout's shim by default; a bundle's node and entry); `env`: added to its environment. */
  constructor(readonly ns: Netns, config: string, command: readonly string[] = [AGENT_BIN], env: Record<string, string> = {}) {
    this.#dir = mkdtempSync(join(tmpdir(), 'rtbpf-'));
    const file = join(this.#dir, 'config.yaml');
    writeFileSync(file, `apiServer:\n  host: 127.0.0.1\n  port: 0\n${config}`);
    this.proc = new AgentProcess({ command: ['ip', 'netns', 'exec', ns.name, ...command], args: ['--config', file], env: agentEnv(env) });
  }
  async started(plugins: readonly string[]): Promise<void> {
    this.port = await this.proc.listening(scaled(30_000));
    for (const p of plugins) {
      await this.proc.waitForLog((l) => l.msg === 'plugin started' && l['plugin'] === p, `plugin ${p} started`, scaled(30_000));
    }
  }
  metrics(): string {
    return this.ns.run('curl', ['-sSf', `http://127.0.0.1:${this.port}/metrics`]);
  }
  #proxy: Promise<string> | undefined;
  /**
   * /metrics like `metrics()`, without a process per scrape: the first call starts one relay in the agent's
   * namespace (a Unix socket in this agent's directory: sockets on a file system are reached from any network
   * namespace) to the agent's port, and each scrape is an HTTP GET over it. For polls under qemu's TCG, where a
   * `curl` through `ip netns exec` costs a fraction of a second of the guest's CPU.
   */
  async scrape(path = '/metrics'): Promise<string> {
    this.#proxy ??= (async () => {
      const sock = join(this.#dir, 'metrics.sock');
      const relay = this.ns.spawnNode(RELAY, [sock, String(this.port)]);
      this.#relay = relay;
      await new Promise((r, j) => {
        relay.stdout?.once('data', r);
        relay.once('exit', (code) => j(new Error(`the metrics relay in ${this.ns.name} exited ${code}`)));
      });
      return sock;
    })();
    const socketPath = await this.#proxy;
    return new Promise((resolve, reject) => {
      const req = httpGet({ socketPath, path, timeout: scaled(30_000) }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${path}: HTTP ${res.statusCode}`))));
      });
      req.on('timeout', () => req.destroy(new Error(`${path}: no answer through the relay`))).on('error', reject);
    });
  }
  #relay: ChildProcess | undefined;
  /** The agent's /readyz body (200 or 503 alike). */
  readyz(): Readiness {
    return JSON.parse(this.ns.run('curl', ['-s', `http://127.0.0.1:${this.port}/readyz`])) as Readiness;
  }
  /** `eventually` over a synchronous probe; a timeout also shows the agent's stderr. */
  async until<T>(probe: () => T | undefined, what: string, timeoutMs = scaled(20_000)): Promise<T> {
    try {
      return await eventually(async () => probe(), what, timeoutMs, 100);
    } catch (e) {
      throw new Error(`${(e as Error).message}; stderr:\n${this.proc.stderr}`, { cause: e });
    }
  }
  /** SIGTERM; resolves with the exit and the BPF programs and links the agent held just before. */
  async terminate(): Promise<{ code: number | null; owned: BpfIds }> {
    const owned = bpfIdsOf(this.proc.pid);
    this.proc.child.kill('SIGTERM');
    const exit = await this.proc.waitExit(scaled(15_000));
    return { code: exit.code, owned };
  }
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      this.#relay?.kill('SIGKILL');
      await this.proc[Symbol.asyncDispose]();
    } finally {
      rmSync(this.#dir, { recursive: true, force: true });
    }
  }
}

/** NsAgent.scrape's relay: a Unix socket (argv[1]) to 127.0.0.1:argv[2]; prints "ready" once listening. */
const RELAY = `
import net from 'node:net';
const [sock, port] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(Number(port), '127.0.0.1');
  const end = () => { c.destroy(); u.destroy(); };
  c.on('error', end);
  u.on('error', end);
  c.pipe(u).pipe(c);
}).listen(sock, () => console.log('ready'));
`;

/** Counter `name` of protocol `proto` (Tcp, Udp, ...) in one /proc/net/snmp text (a row of names, then one of values). */
export function snmpCounter(snmp: string, proto: string, name: string): number {
  const [names, values] = snmp.split('\n').filter((l) => l.startsWith(`${proto}:`)).map((l) => l.trim().split(/\s+/));
  const i = names?.indexOf(name) ?? -1;
  if (i < 0 || !values) throw new Error(`no ${proto} ${name} in /proc/net/snmp`);
  return Number(values[i]);
}

/** RetransSegs in one /proc/net/snmp text. */
export function retransSegsIn(snmp: string): number {
  return snmpCounter(snmp, 'Tcp', 'RetransSegs');
}

/** RetransSegs of one namespace (its /proc/net/snmp, through `Netns.netFile`). */
export function retransSegs(ns: Netns): number {
  return retransSegsIn(ns.netFile('snmp'));
}

/**
 * RetransSegs of every network namespace of the machine, by namespace (one process per namespace, plus the
 * named ones under /run/netns): the tcpretrans tracepoint is node-wide, so on a shared host its count is
 * compared with what all namespaces retransmitted, not only a test's own.
 */
export function machineRetransSegs(): Map<string, number> {
  const out = new Map<string, number>();
  const add = (ns: string, snmp: () => string): void => {
    if (out.has(ns)) return;
    try {
      out.set(ns, retransSegsIn(snmp()));
    } catch {
      /* the process or namespace went away */
    }
  };
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let ns = '';
    try {
      ns = readlinkSync(`/proc/${pid}/ns/net`);
    } catch {
      continue;
    }
    add(ns, () => readFileSync(`/proc/${pid}/net/snmp`, 'utf8'));
  }
  for (const name of existsSync('/run/netns') ? readdirSync('/run/netns') : []) {
    let ino = '';
    try {
      ino = `net:[${statSync(`/run/netns/${name}`).ino}]`;
    } catch {
      continue;
    }
    add(ino, () => sh('ip', ['netns', 'exec', name, 'cat', '/proc/net/snmp']));
  }
  return out;
}

/** What the machine retransmitted between two `machineRetransSegs()` reads (a namespace new since `before` counts from 0). */
export function retransSince(before: ReadonlyMap<string, number>, now = machineRetransSegs()): number {
  let d = 0;
  for (const [ns, v] of now) d += v - (before.get(ns) ?? 0);
  return d;
}

/** The value of one series in Prometheus text, 0 when absent. */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return 0;
}

/** The sum of every series of `name` whose labels include `labels` (0 when none). */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[4]);
  }
  return sum;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until `read()` stops changing for `quietMs` (metrics refreshed after the traffic). */
export async function settled(read: () => number | Promise<number>, quietMs = 600, timeoutMs = scaled(15_000)): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  let since = Date.now();
  while (Date.now() < deadline) {
    await sleep(150);
    const v = await read();
    if (v !== last) {
      last = v;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return v;
  }
  return last;
}

/**
 * A reading taken when nothing in it moved for 700 ms (3+ metric refreshes at 200 ms): counters and
 * metrics then agree. Throws after `tries` looks.
 */
export async function steady<T>(read: () => T | Promise<T>, tries = 40): Promise<T> {
  let last = await read();
  for (let i = 0; i < tries; i++) {
    await sleep(700);
    const now = await read();
    if (JSON.stringify(now) === JSON.stringify(last)) return now;
    last = now;
  }
  throw new Error('the counters never settled');
}

/** The BPF programs and links process `pid` holds (from its fds' /proc fdinfo). */
export interface BpfIds {
  readonly progs: readonly number[];
  readonly links: readonly number[];
}

export function bpfIdsOf(pid: number): BpfIds {
  const progs = new Set<number>();
  const links = new Set<number>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target = '';
    let info = '';
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (!target.startsWith('anon_inode:bpf')) continue;
      info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue;
    }
    const link = /^link_id:\s+(\d+)/m.exec(info);
    const prog = /^prog_id:\s+(\d+)/m.exec(info);
    if (link) links.add(Number(link[1]));
    else if (prog) progs.add(Number(prog[1]));
  }
  return { progs: [...progs], links: [...links] };
}

/**
 * Runs and run time (ns) so far of the BPF programs process `pid` holds, by program name (id when it
 * has none). They count only while BPF run-time statistics are on (`enableBpfRunStats()`, run-stats.ts).
 */
export function progRunStats(pid: number): Map<string, { runs: number; ns: number }> {
  const ours = new Set(bpfIdsOf(pid).progs);
  const out = new Map<string, { runs: number; ns: number }>();
  for (const p of JSON.parse(sh('bpftool', ['-j', 'prog', 'show'])) as { id: number; name?: string; run_cnt?: number; run_time_ns?: number }[]) {
    if (ours.has(p.id)) out.set(p.name ?? String(p.id), { runs: p.run_cnt ?? 0, ns: p.run_time_ns ?? 0 });
  }
  return out;
}

/**
 * What is left of ours after a stop: tc filters on `ifnames` (in `ns`), and the programs and links the
 * agent held (`owned`, taken while it ran: other processes on this host may run the same programs).
 */
export function leftovers(ns: Netns | undefined, ifnames: readonly string[], owned: BpfIds): string[] {
  const left: string[] = [];
  for (const i of ifnames) {
    for (const dir of ['ingress', 'egress']) {
      const out = ns ? ns.run('tc', ['filter', 'show', 'dev', i, dir]) : sh('tc', ['filter', 'show', 'dev', i, dir]);
      if (out.trim()) left.push(`tc ${dir} filter on ${i}: ${out.trim()}`);
    }
  }
  for (const id of owned.progs) {
    const p = bpfObject('prog', id);
    if (p) left.push(`BPF program ${String(p['name'] ?? '?')} (id ${id})`);
  }
  for (const id of owned.links) if (bpfObject('link', id)) left.push(`BPF link ${id}`);
  return left;
}

/**
 * The program or link with this id (bpftool's JSON of it), undefined when there is none. Asked for by id, not
 * by listing every one: a full-run listing failed when another lane's link was being made at that instant
 * (`can't get link by id (…): Resource temporarily unavailable`, which fails the whole listing).
 */
function bpfObject(kind: 'prog' | 'link', id: number): Record<string, unknown> | undefined {
  try {
    return JSON.parse(sh('bpftool', ['-j', kind, 'show', 'id', String(id)])) as Record<string, unknown>;
  } catch (e) {
    const out = String((e as { stdout?: unknown }).stdout ?? '');
    if (out.includes('No such file or directory')) return undefined;
    throw new Error(`bpftool ${kind} show id ${id}: ${out.trim() || String(e)}`, { cause: e });
  }
}

/** `leftovers`, given up to `graceMs` for the kernel's deferred release of closed programs. */
export async function leftoversAfterStop(ns: Netns | undefined, ifnames: readonly string[], owned: BpfIds, graceMs = 5000): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const left = leftovers(ns, ifnames, owned);
    if (!left.length || Date.now() > deadline) return left;
    await sleep(200);
  }
}

/** Stops helper processes: SIGTERM, then SIGKILL after a second; resolves when all have exited. */
export async function stopAll(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const t = setTimeout(() => c.kill('SIGKILL'), 1000);
          c.once('close', () => {
            clearTimeout(t);
            resolve();
          });
          c.kill('SIGTERM');
        }),
    ),
  );
}

/** The MAC address of `ifname` in `ns`. */
export function macOf(ns: Netns, ifname: string): string {
  const [link] = JSON.parse(ns.run('ip', ['-j', 'link', 'show', 'dev', ifname])) as { address: string }[];
  if (!link) throw new Error(`no link ${ifname} in ${ns.name}`);
  return link.address;
}

/**
 * Permanent neighbour entries both ways over the veth pair a (in `na`, addresses `ipsA`) <-> b (in
 * `nb`, `ipsB`), so that no ARP or neighbour discovery runs while a test counts packets.
 */
export function pinNeighbours(na: Netns, a: string, ipsA: readonly string[], nb: Netns, b: string, ipsB: readonly string[]): void {
  const macA = macOf(na, a);
  const macB = macOf(nb, b);
  for (const ip of ipsB) na.run('ip', ['neigh', 'replace', ip, 'lladdr', macB, 'dev', a, 'nud', 'permanent']);
  for (const ip of ipsA) nb.run('ip', ['neigh', 'replace', ip, 'lladdr', macA, 'dev', b, 'nud', 'permanent']);
}
