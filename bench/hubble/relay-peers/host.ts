/**
 * A process of relay-peers.bench.ts holding many Hubble peers: for each, the agent's own flow ring,
 * enricher and gRPC server (src/server/hubble's startHubbleServer, raw writes, as the agent runs it)
 * on its own loopback address and the port every peer shares (as agents share hubble's port, each on
 * its node's IP). It writes fresh flows into every running peer's ring at the rate it is told, and
 * counts them per peer. Driven over the IPC channel (fork):
 *   { op: 'start', peers: [{ name, ip }], port, ringSize }  → { op: 'started', names, ms }
 *   { op: 'stop', names }      its servers stopped as an agent's are on SIGTERM → { op: 'stopped', names, ms }
 *   { op: 'rate', perPeer }    flows/s into each running peer (0: none)
 *   { op: 'counts' }           → { op: 'counts', produced: { name: n }, cpuMs, rssMB }
 *   { op: 'reset' }            the produced counts zeroed
 */
import { fileURLToPath } from 'node:url';
import { createEnricher } from '../../../src/enricher/index.js';
import type { FlowConsumer } from '../../../src/flow/index.js';
import { createLogger } from '../../../src/log/index.js';
import type * as Hubble from '../../../src/server/hubble/index.js';
import { batch, lookup } from '../flows.js';

/** BENCH_RELAY_HUBBLE (set by relay-peers.bench.ts from BENCH_RELAY_BASELINE): another build's src/server/hubble/index.js, else this tree's. */
const hubble = (await import(process.env['BENCH_RELAY_HUBBLE'] ?? '../../../src/server/hubble/index.js')) as typeof Hubble;
const PROTO_DIR = fileURLToPath(new URL('../../../../proto/hubble', import.meta.url));
const protos = hubble.loadHubbleProtos(PROTO_DIR);
const log = createLogger({ level: 'error', component: 'relay-peers-host' });

interface Peer {
  readonly name: string;
  readonly address: string;
  readonly server: Hubble.HubbleServer;
  readonly sink: FlowConsumer;
  /** Flows owed (fractional, from the rate). */
  owed: number;
}

const peers = new Map<string, Peer>();
/** Counts survive a peer's stop and restart (the bench compares them with what the relay delivered). */
const produced = new Map<string, number>();
let perPeer = 0;
let seq = 0;

async function startPeer(name: string, ip: string, port: number, ringSize: number): Promise<void> {
  const ring = hubble.createFlowRing(ringSize);
  const address = hubble.hostPort(ip, port);
  const self = { name, address };
  const server = await hubble.startHubbleServer({
    protos, ring, listen: { host: ip, port }, nodeName: name, version: 'bench', log,
    peers: { list: () => [self], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
  });
  peers.set(name, { name, address, server, sink: createEnricher(lookup, ring), owed: 0 });
}

const TICK_MS = 20;
let last = performance.now();
setInterval(() => {
  const now = performance.now();
  const dt = (now - last) / 1000;
  last = now;
  if (perPeer <= 0) return;
  for (const p of peers.values()) {
    p.owed += perPeer * dt;
    const n = Math.floor(p.owed);
    if (n === 0) continue;
    p.owed -= n;
    p.sink.consume({ source: 'bench', flows: batch(n, seq) });
    seq += n;
    produced.set(p.name, (produced.get(p.name) ?? 0) + n);
  }
}, TICK_MS);

type Msg =
  | { op: 'start'; peers: { name: string; ip: string }[]; port: number; ringSize: number }
  | { op: 'stop'; names: string[] }
  | { op: 'rate'; perPeer: number }
  | { op: 'counts' }
  | { op: 'reset' };

const send = (m: unknown): void => {
  process.send?.(m);
};

process.on('message', (m: Msg) => {
  void (async () => {
    const t0 = performance.now();
    if (m.op === 'start') {
      // In slices: thousands of binds at once would only queue behind each other.
      for (let i = 0; i < m.peers.length; i += 50) {
        await Promise.all(m.peers.slice(i, i + 50).map((p) => startPeer(p.name, p.ip, m.port, m.ringSize)));
      }
      send({ op: 'started', names: m.peers.map((p) => p.name), ms: performance.now() - t0 });
    } else if (m.op === 'stop') {
      await Promise.all(m.names.map(async (n) => {
        const p = peers.get(n);
        peers.delete(n);
        await p?.server[Symbol.asyncDispose]();
      }));
      send({ op: 'stopped', names: m.names, ms: performance.now() - t0 });
    } else if (m.op === 'rate') {
      perPeer = m.perPeer;
      for (const p of peers.values()) p.owed = 0;
      last = performance.now();
    } else if (m.op === 'reset') {
      produced.clear();
    } else if (m.op === 'counts') {
      const cpu = process.cpuUsage();
      send({ op: 'counts', produced: Object.fromEntries(produced), cpuMs: (cpu.user + cpu.system) / 1000, rssMB: process.memoryUsage.rss() / 2 ** 20 });
    }
  })().catch((e: unknown) => send({ op: 'error', message: (e as Error).message }));
});
process.on('disconnect', () => process.exit(0));
send({ op: 'ready' });
