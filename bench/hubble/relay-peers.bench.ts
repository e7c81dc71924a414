/**
 * Hubble Relay over many peers (issue 40 item 4). The real `hubble-relay` (hack/hubble/build.sh's
 * v1.18.4) follows N of our Hubble servers, each the agent's own ring, enricher and gRPC server
 * (bench/hubble/relay-peers/host.ts; a few processes hold them all) on its own loopback address
 * (127.52.x.y) and the one port they share, as agents share Hubble's port on their nodes' IPs. The
 * relay finds them as it does in a cluster: through our Peer service (`nodePeers` over the agent's
 * Nodes informer) fed by real Node objects in the test control plane, whose InternalIPs are those
 * addresses. One follower (`GetFlows {follow: true}` over bare node:http2, relay-peers/reader.ts)
 * reads the merged stream and counts flows by node, LostEvents and the relay's NodeStatusEvents.
 *
 * For each N (BENCH_RELAY_PEERS, default 10,100,500,1000), printed as one JSON line:
 *  - `connectMs`: relay start → its ServerStatus reports all N connected; `followMs`: the follow
 *    request → a flow from every peer; relay RSS and CPU idle (no follower) and following;
 *  - `steady`: BENCH_RELAY_RATE flows/s in total (default 10 000, spread evenly over the peers) for
 *    BENCH_RELAY_MS (5000): flows/s delivered, LostEvents, flows neither delivered nor reported lost
 *    (`missing`), the relay's CPU µs per flow and share of a core, the peers' processes' CPU;
 *  - three peer changes while the follower reads at that rate, each on k = 10 % of the peers (at
 *    least 1), away BENCH_RELAY_AWAY_MS (5000) and back: `restart` (their servers stopped as the
 *    agent stops them on SIGTERM, then started again on the same addresses), `kill` (their process
 *    SIGKILLed, then a new one), `node` (their Node objects deleted with the servers, then created
 *    again). Each gives the time from their stop until the relay's ServerStatus counts them gone
 *    (`goneMs`), from their return until it counts all N again (`statusBackMs`), and until the
 *    follower gets a flow from each (`flowBackMs`: median and max; `returned`: how many of k within
 *    BENCH_RELAY_BACK_MS, 30 000), the NodeStatusEvents the follower got, and for the peers that
 *    stayed, the flows produced, delivered, reported lost (LostEvents, when the relay read a peer
 *    slower than it wrote) and neither (`steadyMissing`: none may go missing).
 * BENCH_RELAY_HOSTS (2): processes holding the peers (plus one for the changing k).
 * BENCH_RELAY_BASELINE: another build's dist/src/server/hubble/index.js (absolute path) for the peers'
 * servers: each N is then run four times, that build and this one alternated ABBA (a before/after of
 * our server).
 * Needs the hubble tools (make test builds them) and the test control plane (RETINA_K8S_*_PORT).
 * Figures: bench/hubble/README.md.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { collectionPath, createInformerFactory, nodeTransform, objectPath, resources } from '../../src/k8s/index.js';
import { createLogger } from '../../src/log/index.js';
import * as hubble from '../../src/server/hubble/index.js';
import { startCluster } from '../../test/integration/harness.js';
import { freePortOn, hubbleTools, startRelay } from '../../test/integration/hubble-tools.js';
import type { Snapshot } from './relay-peers/reader.js';

const PROTO_DIR = fileURLToPath(new URL('../../../proto/hubble', import.meta.url));
const env = (k: string, d: string): string => process.env[k] ?? d;
const SIZES = env('BENCH_RELAY_PEERS', '10,100,500,1000').split(',').map(Number);
const RATE = Number(env('BENCH_RELAY_RATE', '10000'));
const MS = Number(env('BENCH_RELAY_MS', '5000'));
const AWAY_MS = Number(env('BENCH_RELAY_AWAY_MS', '5000'));
const BACK_MS = Number(env('BENCH_RELAY_BACK_MS', '30000'));
const HOSTS = Number(env('BENCH_RELAY_HOSTS', '2'));
const PHASES = env('BENCH_RELAY_PHASES', 'restart,kill,node').split(',').filter((p) => p !== '');
const BASELINE = process.env['BENCH_RELAY_BASELINE'];
const RING = 1024;
const LABEL = 'retina-bench=relay-peers';
const log = createLogger({ level: 'error', component: 'bench' });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (n: number, d = 1): number => Number(n.toFixed(d));
const load = (): number[] => loadavg().map((l) => round(l, 2));

/** The i-th peer's address: 127.52.0.1, ..., 127.52.0.250, 127.52.1.1, ... */
const ipOf = (i: number): string => `127.52.${Math.floor(i / 250)}.${(i % 250) + 1}`;
const nameOf = (i: number): string => `relay-peer-${i}`;

/** A process's CPU time (user + system, all threads) in ms and its RSS in MB, from /proc. */
function proc(pid: number | undefined): { cpuMs: number; rssMB: number } {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return { cpuMs: ((Number(f[11]) + Number(f[12])) * 1000) / 100, rssMB: round(Number(rss) / 1024) };
  } catch {
    return { cpuMs: Number.NaN, rssMB: Number.NaN };
  }
}

// ---- the processes that hold the peers ----
interface Counts { produced: Record<string, number>; cpuMs: number; rssMB: number }
class Host {
  readonly child: ChildProcess;
  private readonly waiting = new Map<string, (m: Record<string, unknown>) => void>();
  private readonly ready: Promise<void>;
  /** `module`: the peers' src/server/hubble/index.js (undefined: this tree's). */
  constructor(module: string | undefined) {
    const env = { ...process.env };
    delete env['BENCH_RELAY_HUBBLE'];
    if (module) env['BENCH_RELAY_HUBBLE'] = module;
    this.child = fork(fileURLToPath(new URL('./relay-peers/host.js', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: ['--max-semi-space-size=2'], env });
    this.ready = new Promise((r) => this.waiting.set('ready', () => r()));
    this.child.on('message', (m: Record<string, unknown>) => {
      if (m['op'] === 'error') throw new Error(`peer host: ${String(m['message'])}`);
      const w = this.waiting.get(String(m['op']));
      this.waiting.delete(String(m['op']));
      w?.(m);
    });
  }
  private ask(msg: Record<string, unknown>, answer: string): Promise<Record<string, unknown>> {
    return new Promise((r) => {
      this.waiting.set(answer, r);
      this.child.send(msg);
    });
  }
  async start(idx: number[], port: number): Promise<number> {
    await this.ready;
    return (await this.ask({ op: 'start', peers: idx.map((i) => ({ name: nameOf(i), ip: ipOf(i) })), port, ringSize: RING }, 'started'))['ms'] as number;
  }
  async stop(idx: number[]): Promise<void> {
    await this.ask({ op: 'stop', names: idx.map(nameOf) }, 'stopped');
  }
  rate(perPeer: number): void {
    this.child.send({ op: 'rate', perPeer });
  }
  reset(): void {
    this.child.send({ op: 'reset' });
  }
  async counts(): Promise<Counts> {
    return (await this.ask({ op: 'counts' }, 'counts')) as unknown as Counts;
  }
  kill(): void {
    this.child.kill('SIGKILL');
  }
}

const protos = hubble.loadHubbleProtos(PROTO_DIR);

/** Polls until `ok` holds (or `ms` passes): the elapsed ms, or undefined on timeout. */
async function until(ok: () => Promise<boolean> | boolean, ms: number, every = 250): Promise<number | undefined> {
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    if (await ok()) return Math.round(performance.now() - t0);
    await sleep(every);
  }
  return undefined;
}

// ---- the follower ----
interface Reader { reset(): void; forget(names: string[], since: number): void; snapshot(): Promise<Snapshot>; stop(): Promise<void> }
async function startReader(addr: string): Promise<Reader> {
  const w = new Worker(new URL('./relay-peers/reader.js', import.meta.url), { workerData: { addr, window: 4 << 20 } });
  const next = (): Promise<unknown> => new Promise((r) => w.once('message', r));
  await next();
  return {
    reset: () => w.postMessage('reset'),
    forget: (names, since) => w.postMessage({ forget: names, since }),
    snapshot: async () => {
      const m = next();
      w.postMessage('snapshot');
      return (await m) as Snapshot;
    },
    stop: async () => {
      const m = next();
      w.postMessage('stop');
      await m;
      await w.terminate();
    },
  };
}

const median = (xs: number[]): number | undefined => (xs.length === 0 ? undefined : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);
const stateName = ['UNKNOWN', 'NODE_CONNECTED', 'NODE_UNAVAILABLE', 'NODE_GONE', 'NODE_ERROR'];
/** The NodeStatusEvents of a snapshot, per state: how many events, how many node names (of `only`, when given). */
function statusSummary(s: Snapshot, only?: Set<string>): Record<string, { events: number; nodes: number }> {
  const out: Record<string, { events: number; nodes: number }> = {};
  for (const st of s.statuses) {
    const e = (out[stateName[st.state] ?? String(st.state)] ??= { events: 0, nodes: 0 });
    e.events++;
    e.nodes += only ? st.names.filter((n) => only.has(n)).length : st.names.length;
  }
  return out;
}

// ---- the bench ----
hubbleTools(); // built, or fail now
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(1));
await using cluster = await startCluster();
const { client } = cluster;
const factory = createInformerFactory({ client, log });
// Only the bench's Nodes (the harness's kwok nodes have addresses no Hubble server answers on).
const nodes = factory.informer({ resource: resources.nodes, labelSelector: LABEL, transform: nodeTransform });
factory.start();
await nodes.waitForSync();
const PORT = await freePortOn('0.0.0.0');
const peerService = await hubble.startHubbleServer({
  protos, ring: hubble.createFlowRing(16), listen: { host: '127.51.0.1', port: PORT }, nodeName: 'peer-service', version: 'bench', log,
  peers: hubble.nodePeers(nodes, () => PORT),
});

async function pool<T>(items: T[], width: number, f: (t: T) => Promise<unknown>): Promise<void> {
  const queue = [...items];
  await Promise.all(Array.from({ length: width }, async () => {
    for (let t = queue.shift(); t !== undefined; t = queue.shift()) await f(t);
  }));
}
const createNodes = (idx: number[]): Promise<void> => pool(idx, 16, (i) => client.request('POST', collectionPath(resources.nodes), {
  body: { apiVersion: 'v1', kind: 'Node', metadata: { name: nameOf(i), labels: { 'retina-bench': 'relay-peers' } }, status: { addresses: [{ type: 'InternalIP', address: ipOf(i) }] } },
}));
const deleteNodes = (idx: number[]): Promise<void> => pool(idx, 16, (i) => client.request('DELETE', objectPath(resources.nodes, undefined, nameOf(i))).catch(() => undefined));
/** Leftovers of an earlier run that did not finish. */
await deleteNodes(nodes.list().map((n) => Number(n.name.slice('relay-peer-'.length))));

const hostsCpu = async (hs: Host[]): Promise<{ cpuMs: number; rssMB: number; produced: Record<string, number> }> => {
  const cs = await Promise.all(hs.map((h) => h.counts()));
  return { cpuMs: cs.reduce((a, c) => a + c.cpuMs, 0), rssMB: round(cs.reduce((a, c) => a + c.rssMB, 0)), produced: Object.assign({}, ...cs.map((c) => c.produced)) as Record<string, number> };
};

async function runSize(n: number, module: string | undefined): Promise<Record<string, unknown>> {
  const k = Math.max(1, Math.round(n / 10));
  const all = Array.from({ length: n }, (_, i) => i);
  const changing = all.slice(n - k);
  const staying = all.slice(0, n - k);
  const changingNames = new Set(changing.map(nameOf));
  // Each ServerStatus of the relay asks every peer: polled every n/2 ms (at least 250), so that the
  // polling itself (n RPCs a time) stays a small part of what is measured.
  const statusEvery = Math.max(250, n / 2);
  const t0 = performance.now();
  await createNodes(all);
  const nodesMs = await until(() => nodes.size === n, 60_000, 100);
  const hosts = Array.from({ length: HOSTS }, () => new Host(module));
  let churnHost = new Host(module);
  const startMs = Math.max(...(await Promise.all([...hosts.map((h, j) => h.start(staying.filter((i) => i % HOSTS === j), PORT)), churnHost.start(changing, PORT)])));
  const result: Record<string, unknown> = { peers: n, server: module ?? 'this', changing: k, createNodesMs: Math.round(performance.now() - t0), peerServiceSyncedMs: nodesMs, hostsStartMs: Math.round(startMs) };
  const relay = await startRelay(`127.51.0.1:${PORT}`, { host: '127.51.0.2', log: { file: `${tmpdir()}/relay-peers-${n}.log` } });
  let reader: Reader | undefined;
  // The relay is no child that dies with this process: stopped on every way out.
  const onExit = (): void => relay.stop();
  process.once('exit', onExit);
  try {
    result['connectMs'] = await until(async () => (await relay.connected()) === n, 120_000, statusEvery);
    // Idle: connected, no follower, no flows.
    const everyHost = (): Host[] => [...hosts, churnHost];
    let r0 = proc(relay.pid);
    let h0 = await hostsCpu(everyHost());
    await sleep(5000);
    let r1 = proc(relay.pid);
    let h1 = await hostsCpu(everyHost());
    result['idle'] = { relayRssMB: r1.rssMB, relayCores: round((r1.cpuMs - r0.cpuMs) / 5000, 3), peersCores: round((h1.cpuMs - h0.cpuMs) / 5000, 3), peersRssMB: h1.rssMB };

    reader = await startReader(relay.addr);
    const rd = reader;
    const perPeer = RATE / n;
    for (const h of everyHost()) h.rate(perPeer);
    result['followMs'] = await until(async () => Object.keys((await rd.snapshot()).first).length === n, 60_000, 250);

    // Steady state: reset with nothing in flight, RATE for MS, then what is still on its way.
    /**
     * No more flows, and what is on its way delivered: the follower's counts still for 5 s (the relay's
     * sort buffer drains after 1 s without flows; a niced relay on a loaded machine can stall longer).
     */
    const quiet = async (): Promise<void> => {
      for (const h of everyHost()) h.rate(0);
      let seen = -1;
      let still = 0;
      await until(async () => {
        const x = await rd.snapshot();
        still = x.flows + x.lost === seen ? still + 1 : 0;
        seen = x.flows + x.lost;
        return still >= 10;
      }, 60_000, 500);
    };
    const begin = async (): Promise<void> => {
      await quiet();
      for (const h of everyHost()) h.reset();
      rd.reset();
      await sleep(100);
      r0 = proc(relay.pid);
      h0 = await hostsCpu(everyHost());
      for (const h of everyHost()) h.rate(perPeer);
    };
    await begin();
    const tSteady = performance.now();
    await sleep(MS);
    // At the window's end: what the follower got within it, the CPU so far; then no more flows.
    let s = await rd.snapshot();
    for (const h of everyHost()) h.rate(0);
    const elapsed = performance.now() - tSteady;
    r1 = proc(relay.pid);
    h1 = await hostsCpu(everyHost());
    const inWindow = s.flows;
    await quiet();
    s = await rd.snapshot();
    let produced = (await hostsCpu(everyHost())).produced;
    const sum = (o: Record<string, number>, only?: (name: string) => boolean): number => Object.entries(o).reduce((a, [name, v]) => a + (only && !only(name) ? 0 : v), 0);
    const made = sum(produced);
    result['steady'] = {
      // delivered: within the window; every flow made in it is delivered later or reported lost, or counted missing.
      offeredPerSec: RATE, producedPerSec: Math.round((made / elapsed) * 1000), deliveredPerSec: Math.round((inWindow / elapsed) * 1000), delivered: s.flows,
      lost: s.lost, missing: made - s.flows - s.lost, nodesDelivering: Object.keys(s.byNode).length,
      relayUsPerFlow: round(((r1.cpuMs - r0.cpuMs) * 1000) / Math.max(1, inWindow), 2), relayCores: round((r1.cpuMs - r0.cpuMs) / elapsed, 3), relayRssMB: r1.rssMB,
      peersUsPerFlow: round(((h1.cpuMs - h0.cpuMs) * 1000) / Math.max(1, made), 2), peersCores: round((h1.cpuMs - h0.cpuMs) / elapsed, 3), peersRssMB: h1.rssMB,
      ...(s.ended ? { ended: s.ended } : {}),
    };
    process.stderr.write(JSON.stringify({ ...result, load: load() }) + '\n');

    for (const phase of PHASES) {
      await begin();
      await sleep(1000);
      const tStop = performance.now();
      if (phase === 'kill') churnHost.kill();
      else if (phase === 'node') await Promise.all([deleteNodes(changing), churnHost.stop(changing)]);
      else await churnHost.stop(changing);
      const goneMs = await until(async () => (await relay.connected()) === n - k, AWAY_MS, statusEvery);
      const rest = AWAY_MS - (performance.now() - tStop);
      if (rest > 0) await sleep(rest);
      const tBackWall = Date.now();
      if (phase === 'kill') {
        churnHost = new Host(module);
        churnHost.rate(perPeer);
      }
      rd.forget([...changingNames], tBackWall);
      await Promise.all([churnHost.start(changing, PORT), ...(phase === 'node' ? [createNodes(changing)] : [])]);
      const backAll = async (): Promise<boolean> => {
        s = await rd.snapshot();
        return changing.every((i) => s.first[nameOf(i)] !== undefined);
      };
      const [statusBackMs] = await Promise.all([until(async () => (await relay.connected()) === n, BACK_MS, statusEvery), until(backAll, BACK_MS, 250)]);
      s = await rd.snapshot();
      const backs = changing.flatMap((i) => (s.first[nameOf(i)] === undefined ? [] : [(s.first[nameOf(i)] as number) - tBackWall]));
      await quiet();
      s = await rd.snapshot();
      produced = (await hostsCpu(everyHost())).produced;
      const stays = (name: string): boolean => !changingNames.has(name);
      const steadyMade = sum(produced, stays);
      const steadyGot = sum(s.byNode, stays);
      const steadyLost = sum(s.lostByNode, stays);
      result[phase] = {
        goneMs, statusBackMs, returned: backs.length, flowBackMs: { median: median(backs), max: backs.length ? Math.max(...backs) : undefined },
        steadyProduced: steadyMade, steadyDelivered: steadyGot, steadyLost, steadyMissing: steadyMade - steadyGot - steadyLost, lost: s.lost,
        changingProduced: sum(produced, (x) => changingNames.has(x)), changingDelivered: sum(s.byNode, (x) => changingNames.has(x)),
        statuses: statusSummary(s, changingNames), ...(s.ended ? { ended: s.ended } : {}),
      };
      process.stderr.write(JSON.stringify({ peers: n, server: module ?? 'this', [phase]: result[phase], load: load() }) + '\n');
    }
    result['load'] = load();
    return result;
  } finally {
    await reader?.stop();
    relay.stop();
    process.off('exit', onExit);
    for (const h of [...hosts, churnHost]) h.kill();
    await deleteNodes(all);
    await until(() => nodes.size === 0, 60_000, 100);
  }
}

const runs: Record<string, unknown>[] = [];
try {
  for (const n of SIZES) {
    for (const module of BASELINE ? [BASELINE, undefined, undefined, BASELINE] : [undefined]) runs.push(await runSize(n, module));
  }
} finally {
  await peerService[Symbol.asyncDispose]();
  await factory[Symbol.asyncDispose]();
}
process.stdout.write(JSON.stringify({ bench: 'hubble-relay-peers', offeredPerSec: RATE, ms: MS, awayMs: AWAY_MS, hosts: HOSTS, baseline: BASELINE, runs }) + '\n');
