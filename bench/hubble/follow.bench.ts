/**
 * Hubble followers, side by side: today's grpc-js path (each GetFlowsResponse written by grpc-js, one
 * HTTP/2 DATA frame and one socket write per message: `rawWrites: false`) and the raw path
 * (src/server/hubble/frames.ts: each flow encoded once for every follower, many messages per HTTP/2
 * write), alternated round by round in one process with the real enricher, ring and gRPC server.
 * For 1 and 4 follow clients and flows offered at 100 000/s and flat out (batches of 256, the
 * producer never waits), prints per run the flows each client received per second (total over the
 * clients), the flows they were told they lost (LostEvent), the flows written, and the main thread's
 * busy µs per flow delivered (event-loop utilization: producer, enricher, ring and server; on this
 * shared machine a steadier figure than the rates, since the producer, the server and the clients
 * compete for 2 cores with other work).
 * Clients: grpc-js (a worker thread each, its own event loop, as `hubble observe -f` would be its own
 * process; it reads raw messages and counts the oneof tag, since a Go client decodes far faster than
 * protobufjs), and, when hack/hubble/build.sh has built it, the real `hubble observe --follow -o
 * jsonpb` with its output counted line by line.
 * A third client, `http2`, reads the stream with node:http2 and splits the messages itself: the
 * server's own limit, with a client as cheap as a Go decode loop.
 * `relay`: the real Hubble Relay over two agents (both servers in this process, each given half the
 * flows), read by the `http2` client.
 * Environment: BENCH_FOLLOW_MS (2000) per run, BENCH_FOLLOW_ROUNDS (2), BENCH_FOLLOW_CLIENTS
 * (grpc-js,http2,hubble-cli,relay), BENCH_RELAY_LOG (the relay's log on this terminal), BENCH_RELAY_ARGS (more relay flags,
 * e.g. `--sort-buffer-len-max 1000`), BENCH_FOLLOW_ONLY (one run: path,clients,client,offered, e.g. raw,1,http2,max),
 * BENCH_FOLLOW_BASELINE (another build's dist/, e.g. main's copied under .cache/: its server alternated with
 * this one's, raw path both, http2 and relay clients), BENCH_FOLLOW_ENCODE_ONLY (with a baseline: only the two
 * builds' encoders, alternated, and whether their frames are byte for byte the same).
 * Through the relay the figures also give the relay's CPU per flow delivered and its share of a core
 * (from /proc), and the flows each agent had to report lost (`agentLost`, which the client's `lost`
 * should equal).
 *
 * Figures: see bench/hubble/README.md.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createEnricher } from '../../src/enricher/index.js';
import { type Flow, type FlowConsumer } from '../../src/flow/index.js';
import { batch, lookup } from './flows.js';
import { createLogger } from '../../src/log/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import * as hubble from '../../src/server/hubble/index.js';
import type { HubbleServer } from '../../src/server/hubble/index.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PROTO_DIR = `${ROOT}proto/hubble`;
const log = createLogger({ level: 'error', component: 'bench' });

/** A Hubble server implementation: this tree's, or another build's (BENCH_FOLLOW_BASELINE). */
interface Impl {
  readonly name: string;
  readonly createFlowRing: typeof hubble.createFlowRing;
  readonly startHubbleServer: typeof hubble.startHubbleServer;
  readonly protos: ReturnType<typeof hubble.loadHubbleProtos>;
}
const current: Impl = { name: 'this', createFlowRing: hubble.createFlowRing, startHubbleServer: hubble.startHubbleServer, protos: hubble.loadHubbleProtos(PROTO_DIR) };
/**
 * BENCH_FOLLOW_BASELINE: the dist/ of another build (e.g. main's, copied under this checkout so that
 * it finds node_modules): its Hubble server runs alternated with this one's, raw path both.
 */
const baselineDir = process.env['BENCH_FOLLOW_BASELINE'];
const baseline: Impl | undefined = baselineDir ? await (async () => {
  const m = (await import(`${baselineDir}/src/server/hubble/index.js`)) as typeof hubble;
  return { name: 'baseline', createFlowRing: m.createFlowRing, startHubbleServer: m.startHubbleServer, protos: m.loadHubbleProtos(PROTO_DIR) };
})() : undefined;


const CLIENT = `
import { workerData, parentPort } from 'node:worker_threads';
const grpc = await import(workerData.grpc);
const { loadHubbleProtos } = await import(workerData.protos);
const p = loadHubbleProtos(workerData.dir);
const c = new grpc.Client(workerData.addr, grpc.credentials.createInsecure(), { 'grpc-node.flow_control_window': workerData.window });
const def = p.observer.GetFlows;
let flows = 0, lost = 0;
// Raw messages: only the oneof tag is read (field 1 flow: 0x0a; field 3 lost_events: 0x1a, decoded).
const call = c.makeServerStreamRequest(def.path, def.requestSerialize, (b) => b, { follow: true });
call.on('data', (b) => { if (b[0] === 0x0a) flows++; else if (b[0] === 0x1a) lost += def.responseDeserialize(b).lost_events.num_events_lost; });
call.on('error', () => undefined);
parentPort.postMessage('ready');
parentPort.on('message', (msg) => {
  if (msg === 'stop') { call.cancel(); c.close(); parentPort.postMessage({ flows, lost }); }
});
`;

/**
 * A bare gRPC reader over node:http2: it frames the request and splits the response into its
 * length-prefixed messages itself, counting them by their oneof tag. It shows what the server sends
 * when the client is not the limit (grpc-js's client costs ~30 µs per message on this machine).
 */
const H2_CLIENT = `
import { workerData, parentPort } from 'node:worker_threads';
import http2 from 'node:http2';
const { loadHubbleProtos } = await import(workerData.protos);
const def = loadHubbleProtos(workerData.dir).observer.GetFlows;
const session = http2.connect('http://' + workerData.addr, { settings: { initialWindowSize: workerData.window } });
session.on('connect', () => session.setLocalWindowSize(workerData.window));
const req = session.request({ ':method': 'POST', ':path': '/observer.Observer/GetFlows', 'content-type': 'application/grpc', te: 'trailers' });
const body = Buffer.from([0x18, 0x01]); // follow: true (field 3, varint 1)
const head = Buffer.alloc(5); head.writeUInt32BE(body.length, 1);
req.end(Buffer.concat([head, body]));
let flows = 0, lost = 0, pending = Buffer.alloc(0);
// The response's oneof field (1 flow, 3 lost_events, ...): its fields come in any order (Hubble Relay writes node_name first).
// Also counts flows by node_name (field 1000) when it comes before the flow (as Hubble Relay writes it).
const byNode = {};
const oneof = (b, p, end) => {
  const varint = () => { let v = 0, m = 1, x; do { x = b[p++]; v += (x & 0x7f) * m; m *= 128; } while (x & 0x80); return v; };
  let node;
  while (p < end) {
    const key = varint(), field = Math.floor(key / 8), wire = key & 7;
    if (field === 1 && node !== undefined) byNode[node] = (byNode[node] ?? 0) + 1;
    if (field === 1 || field === 3) return field;
    if (field === 1000 && wire === 2) { const n = varint(); node = b.toString('latin1', p, p + n); p += n; continue; }
    // (Not \`p += varint()\`: that reads p before varint() moves it past the length.)
    if (wire === 0) varint(); else if (wire === 2) { const n = varint(); p += n; } else if (wire === 1) p += 8; else if (wire === 5) p += 4; else return 0;
  }
  return 0;
};
req.on('data', (d) => {
  let b = pending.length ? Buffer.concat([pending, d]) : d;
  let pos = 0;
  while (b.length - pos >= 5) {
    const len = b.readUInt32BE(pos + 1);
    if (b.length - pos < 5 + len) break;
    const kind = oneof(b, pos + 5, pos + 5 + len);
    if (kind === 1) flows++;
    else if (kind === 3) lost += def.responseDeserialize(b.subarray(pos + 5, pos + 5 + len)).lost_events?.num_events_lost ?? 0;
    pos += 5 + len;
  }
  pending = b.subarray(pos);
});
req.on('error', () => undefined);
parentPort.postMessage('ready');
parentPort.on('message', (msg) => {
  if (msg === 'stop') { req.close(); session.close(); parentPort.postMessage({ flows, lost, byNode }); }
});
`;

/** The clients' HTTP/2 receive window: 4 MiB, as a Go client's BDP estimator grows it (Node's default is 64 KiB). */
const WINDOW = 4 << 20;

interface Counts { flows: number; lost: number; byNode?: Record<string, number> }
interface Client { stop(): Promise<Counts> }

async function workerClient(script: string, addr: string): Promise<Client> {
  const worker = new Worker(script, {
    eval: true,
    workerData: { grpc: import.meta.resolve('@grpc/grpc-js'), protos: new URL('../../src/server/hubble/index.js', import.meta.url).href, dir: PROTO_DIR, addr, window: WINDOW },
  });
  const next = (): Promise<unknown> => new Promise((r) => worker.once('message', r));
  await next();
  return {
    async stop() {
      worker.postMessage('stop');
      const got = (await next()) as Counts;
      await worker.terminate();
      return got;
    },
  };
}

/** The real hubble CLI's directory, or undefined when hack/hubble/build.sh has not built it. */
function hubbleTools(): string | undefined {
  const r = spawnSync('bash', [`${ROOT}hack/hubble/build.sh`], { encoding: 'utf8', env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

async function cliClient(tools: string, addr: string): Promise<Client> {
  const c = spawn(`${tools}/hubble`, ['observe', '--server', addr, '--follow', '-o', 'jsonpb'], { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, HUBBLE_CONFIG: '/dev/null' } });
  const counts: Counts = { flows: 0, lost: 0 };
  let rest = '';
  c.stdout.on('data', (d: Buffer) => {
    const lines = (rest + d.toString('latin1')).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) {
      if (l.startsWith('{"flow"')) counts.flows++;
      else if (l.startsWith('{"lost_events"')) counts.lost += Number(/"num_events_lost":"?(\d+)/.exec(l)?.[1] ?? 0);
    }
  });
  // The CLI connects, then asks: give it a moment (it prints nothing until flows come).
  await new Promise((r) => setTimeout(r, 700));
  return {
    async stop() {
      await new Promise<void>((r) => {
        c.once('close', () => r());
        c.kill('SIGINT');
      });
      return counts;
    },
  };
}

type Kind = 'grpc-js' | 'http2' | 'hubble-cli' | 'relay';

/** Extra hubble-relay flags (BENCH_RELAY_ARGS, space-separated), e.g. `--sort-buffer-len-max 1000`. */
const relayArgs = (process.env['BENCH_RELAY_ARGS'] ?? '').split(' ').filter((a) => a !== '');

/** A process's CPU time (user + system) in ms from /proc (Linux; NaN elsewhere). */
function processCpuMs(pid: number | undefined): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in USER_HZ (100)
  } catch {
    return Number.NaN;
  }
}

/** Hubble Relay (the real one) over the agents at `peers`, listening on a free port of 127.0.45.9; stops with SIGKILL. */
async function startRelay(tools: string, peerService: string): Promise<{ addr: string; cpuMs(): number; stop(): void }> {
  const free = (): Promise<number> => new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.45.9', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
  const port = await free();
  const relay = spawn(`${tools}/hubble-relay`, ['serve', '--peer-service', peerService, '--disable-client-tls', '--disable-server-tls',
    '--listen-address', `127.0.45.9:${port}`, '--health-listen-address', `127.0.45.9:${await free()}`, '--gops=false', '--retry-timeout', '1s', ...relayArgs], { stdio: ['ignore', process.env['BENCH_RELAY_LOG'] ? 'inherit' : 'ignore', process.env['BENCH_RELAY_LOG'] ? 'inherit' : 'ignore'] });
  // The relay asks the peer service, then connects to each agent.
  await new Promise((r) => setTimeout(r, 3000));
  return { addr: `127.0.45.9:${port}`, cpuMs: () => processCpuMs(relay.pid), stop: () => relay.kill('SIGKILL') };
}

async function run(rawWrites: boolean, clients: number, rate: number, ms: number, kind: Kind, tools: string | undefined, impl: Impl = current): Promise<Record<string, unknown>> {
  const { createFlowRing, startHubbleServer, protos } = impl;
  const metrics = createMetricsRegistry({ processMetrics: false });
  // Through the relay: two agents (both in this process, on its one main thread), each with half the flows.
  const agents = kind === 'relay' ? 2 : 1;
  const rings = Array.from({ length: agents }, () => createFlowRing(4096));
  const peers: { name: string; address: string }[] = [];
  const servers: HubbleServer[] = [];
  for (const [i, ring] of rings.entries()) {
    const server = await startHubbleServer({
      protos, ring, listen: { host: '127.0.45.9', port: 0 }, nodeName: `node-${i}`, version: 'bench', rawWrites,
      peers: { list: () => peers, subscribe: () => ({ [Symbol.dispose]: () => undefined }) }, log, metrics,
    });
    servers.push(server);
    peers.push({ name: `node-${i}`, address: `127.0.45.9:${server.port}` });
  }
  const relay = kind === 'relay' ? await startRelay(tools as string, peers[0]?.address as string) : undefined;
  const addr = relay?.addr ?? (peers[0]?.address as string);
  const cs: Client[] = [];
  for (let i = 0; i < clients; i++) cs.push(kind === 'hubble-cli' ? await cliClient(tools as string, addr) : await workerClient(kind === 'grpc-js' ? CLIENT : H2_CLIENT, addr));
  await new Promise((r) => setTimeout(r, 400));
  const cs2: FlowConsumer[] = rings.map((ring) => createEnricher(lookup, ring));
  // Fresh objects per batch, as decoders make them; a pool of 64 batches is reused round-robin only
  // because the ring has dropped them long before they come round again (16 384 > 4 096).
  const pre = Array.from({ length: 64 }, (_, b) => batch(256, b * 256));
  const relayCpu0 = relay?.cpuMs() ?? 0;
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  let written = 0;
  for (let i = 0; performance.now() - t0 < ms; i++) {
    // Stamped now, as a decoder stamps a record: Hubble Relay sorts by time (a LostEvent is stamped when sent).
    const flows = pre[i % 64] as Flow[];
    const now = Date.now();
    for (const f of flows) (f as { timeMs: number }).timeMs = now;
    (cs2[i % agents] as FlowConsumer).consume({ source: 'bench', flows });
    written += 256;
    const wait = t0 + (written * 1000) / rate - performance.now();
    await new Promise((r) => (wait > 0 ? setTimeout(r, wait) : setImmediate(r)));
  }
  const elapsed = performance.now() - t0;
  const busyMs = performance.eventLoopUtilization(elu0).active;
  // What was written in time but is still on its way: give it a moment, counted against the same window.
  await new Promise((r) => setTimeout(r, 300));
  const relayCpuMs = (relay?.cpuMs() ?? 0) - relayCpu0;
  const got: Counts[] = [];
  for (const cl of cs) got.push(await cl.stop());
  relay?.stop();
  for (const server of servers) await server[Symbol.asyncDispose]();
  // What the agents counted lost (their followers fell a ring behind and sent a LostEvent).
  const agentLost = Number(/hubble_flows_lost_total (\d+)/.exec((await metrics.expose()).body)?.[1] ?? 0);
  const flows = got.reduce((a, g) => a + g.flows, 0);
  const lost = got.reduce((a, g) => a + g.lost, 0);
  return {
    server: impl.name, path: rawWrites ? 'raw' : 'grpc-js', client: kind, clients, offeredPerSec: rate >= 1e9 ? 'max' : rate,
    deliveredPerSec: Math.round((flows / elapsed) * 1000), perClient: got.map((g) => Math.round((g.flows / elapsed) * 1000)), lost, agentLost, written,
    missing: written * clients - flows - lost,
    ...(relay ? { byNode: got.map((g) => g.byNode) } : {}),
    // The main thread's busy time (producer, enricher, ring and server) per flow delivered: what a quiet core's rate would be.
    busyUsPerFlow: Number(((busyMs * 1000) / Math.max(1, flows)).toFixed(2)),
    // The relay's CPU (all its threads) per flow it delivered, and its share of a core.
    ...(relay ? { relayUsPerFlow: Number(((relayCpuMs * 1000) / Math.max(1, flows)).toFixed(2)), relayCores: Number((relayCpuMs / (elapsed + 300)).toFixed(2)) } : {}),
  };
}

const ms = Number(process.env['BENCH_FOLLOW_MS'] ?? 2000);
const rounds = Number(process.env['BENCH_FOLLOW_ROUNDS'] ?? 2);
const tools = hubbleTools();
const only = process.env['BENCH_FOLLOW_ONLY']?.split(',');
if (only) {
  // One run, e.g. for a CPU profile: BENCH_FOLLOW_ONLY=raw,1,http2,max (path, clients, client, offered).
  const [path, n, kind, rate] = only;
  process.stdout.write(JSON.stringify(await run(path === 'raw', Number(n), rate === 'max' ? 1e9 : Number(rate), ms, kind as Kind, tools)) + '\n');
  process.exit(0);
}
/**
 * The encoder alone (each build's `flowsFrame`), alternated pass by pass over the same 4 096 mapped flows
 * (this tree's mapping, the bench's endpoints): µs per GetFlowsResponse frame, a steadier figure than the
 * rates on a shared machine (one thread, no sockets). Each pass's best of 5 × 4 096.
 */
function encodePasses(impls: readonly Impl[], passes: number): Record<string, number[] | number> {
  const enricher = createEnricher(lookup, { consume: () => undefined });
  const flows = batch(4096, 0);
  enricher.consume({ source: 'bench', flows });
  const objs = flows.map((f) => hubble.toHubbleFlow(f, 'node-0'));
  // Warm-up (JIT), comparing the builds' frames byte for byte (an endpoint's first frame encodes it, later ones copy its cached bytes).
  const differ = objs.filter((o) => {
    const [a, b] = impls.map((impl) => impl.protos.flowsFrame({ flow: o, node_name: 'node-0', time: o['time'] }));
    return !(a as Buffer).equals(b as Buffer);
  }).length;
  const out: Record<string, number[]> = {};
  for (let pass = 0; pass < passes; pass++) {
    for (const impl of pass % 2 === 0 ? impls : [...impls].reverse()) {
      let best = Infinity;
      for (let k = 0; k < 5; k++) {
        const t0 = performance.now();
        for (const o of objs) impl.protos.flowsFrame({ flow: o, node_name: 'node-0', time: o['time'] });
        best = Math.min(best, performance.now() - t0);
      }
      (out[impl.name] ??= []).push(Number(((best * 1000) / objs.length).toFixed(2)));
    }
  }
  return { ...out, frames: objs.length, framesDiffering: differ };
}

if (baseline) {
  const encodeUsPerFlow = encodePasses([baseline, current], 10);
  process.stderr.write(JSON.stringify({ encodeUsPerFlow }) + '\n');
  if (process.env['BENCH_FOLLOW_ENCODE_ONLY']) {
    process.stdout.write(JSON.stringify({ bench: 'hubble-encode-baseline', baseline: baselineDir, encodeUsPerFlow }) + '\n');
    process.exit(0);
  }
  // This build's server beside the baseline's, raw path both, alternated run by run.
  const kinds = (process.env['BENCH_FOLLOW_CLIENTS']?.split(',') ?? ['http2', 'relay']).filter((k) => k !== 'relay' || tools !== undefined) as Kind[];
  await run(true, 1, 20_000, 1000, 'http2', tools, baseline); // warm-up; not reported
  await run(true, 1, 20_000, 1000, 'http2', tools);
  const results: Record<string, unknown>[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const kind of kinds) {
      for (const clients of kind === 'relay' ? [1] : [1, 4]) {
        for (const rate of [100_000, 1e9]) {
          for (const impl of r % 2 === 0 ? [baseline, current] : [current, baseline]) {
            results.push({ round: r, ...(await run(true, clients, rate, ms, kind, tools, impl)) });
            process.stderr.write(JSON.stringify(results.at(-1)) + '\n');
          }
        }
      }
    }
  }
  process.stdout.write(JSON.stringify({ bench: 'hubble-follow-baseline', baseline: baselineDir, ms, rounds, encodeUsPerFlow, runs: results }) + '\n');
  process.exit(0);
}
await run(true, 1, 20_000, 1000, 'grpc-js', tools); // warm-up (JIT, the first connection); not reported
await run(false, 1, 20_000, 1000, 'grpc-js', tools);
const results: Record<string, unknown>[] = [];
const kinds = (process.env['BENCH_FOLLOW_CLIENTS']?.split(',') ?? ['grpc-js', 'http2', 'hubble-cli', 'relay']).filter((k) => (k !== 'hubble-cli' && k !== 'relay') || tools !== undefined) as Kind[];
for (let r = 0; r < rounds; r++) {
  for (const kind of kinds) {
    for (const clients of [1, 4]) {
      for (const rate of [100_000, 1e9]) {
        // Alternated: old then new in one round, new then old in the next.
        for (const raw of r % 2 === 0 ? [false, true] : [true, false]) {
          const res = await run(raw, clients, rate, ms, kind, tools);
          results.push({ round: r, ...res });
          process.stderr.write(JSON.stringify(results.at(-1)) + '\n');
        }
      }
    }
  }
}
process.stdout.write(JSON.stringify({ bench: 'hubble-follow', ms, rounds, hubbleCli: tools !== undefined, runs: results }) + '\n');
