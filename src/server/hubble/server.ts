/**
 * The agent's Hubble gRPC server (@grpc/grpc-js): `observer.Observer` (GetFlows, ServerStatus,
 * GetNodes; the other RPCs answer UNIMPLEMENTED) and `peer.Peer` (Notify), over the flow ring, on a
 * TCP address and optionally a unix socket.
 *
 * GetFlows: history first (the last `number` matching flows, or the first `number` with `first`,
 * within `since`/`until`; every held flow when `number` is 0), then with `follow` the new flows as
 * they are written. Responses are encoded once per flow and many go in one HTTP/2 write, below
 * grpc-js (frames.ts). A follower writes as fast as its client reads (HTTP/2 flow control); when the
 * ring has overwritten flows it had not sent yet, it sends one LostEvent (source
 * HUBBLE_RING_BUFFER) with how many, and carries on from the oldest flow still held. The drain path
 * never waits for a client.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../../log/index.js';
import { catalog, type MetricWriters } from '../../metrics/index.js';
import { compileFlowFilters, FilterError, type FlowMatcher } from './filter.js';
import { createEncodedFlows, grpcSink, rawSink, rawStreamOf, type PickedFlow } from './frames.js';
import { timestamp, timestampMs, toHubbleFlow, type HubbleObject } from './map.js';
import type { HubbleProtos } from './proto.js';
import type { FlowRing } from './ring.js';

/** One Hubble peer: a node and where its Hubble service answers (`ip:port`). */
export interface HubblePeer {
  readonly name: string;
  readonly address: string;
}

export type PeerChange = 'PEER_ADDED' | 'PEER_DELETED' | 'PEER_UPDATED';

/** Where the peer list comes from (the API server's Nodes, or this node alone). */
export interface PeerSource {
  list(): HubblePeer[];
  subscribe(onChange: (type: PeerChange, peer: HubblePeer) => void): Disposable;
}

export interface HubbleServerOptions {
  readonly protos: HubbleProtos;
  readonly ring: FlowRing;
  /** host ('' for every address) and port (0: any free port). */
  readonly listen: { readonly host: string; readonly port: number } | undefined;
  /** '' or undefined for none. */
  readonly socketPath?: string;
  readonly nodeName: string;
  readonly version: string;
  readonly peers: PeerSource;
  readonly log: Logger;
  readonly metrics?: MetricWriters;
  /** Flows sent before a follower yields to the event loop (default 512). */
  readonly sliceSize?: number;
  /** grpc-js path: messages a follower may have queued for its client before it waits for it (default 256). */
  readonly maxBuffered?: number;
  /**
   * GetFlows messages encoded once per flow and written many per HTTP/2 write below grpc-js
   * (frames.ts; default true). false: grpc-js writes each message, as before (the benchmark's baseline).
   */
  readonly rawWrites?: boolean;
  /** Raw path: bytes of messages gathered into one write (default 64 KiB). */
  readonly chunkBytes?: number;
}

export interface HubbleServer extends AsyncDisposable {
  /** The TCP port bound (0 when no TCP address). */
  readonly port: number;
}

type FlowsCall = grpc.ServerWritableStream<HubbleObject, HubbleObject>;

function grpcError(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() });
}

function unimplemented(name: string) {
  const msg = `${name} is not implemented by the retina-ts agent`;
  return (call: { emit?: unknown; end?: unknown }, cb?: grpc.sendUnaryData<unknown>): void => {
    if (cb) cb(grpcError(grpc.status.UNIMPLEMENTED, msg));
    else (call as FlowsCall).emit('error', grpcError(grpc.status.UNIMPLEMENTED, msg));
  };
}

export async function startHubbleServer(o: HubbleServerOptions): Promise<HubbleServer> {
  const { ring, log, nodeName } = o;
  const started = process.hrtime.bigint();
  const slice = o.sliceSize ?? 512;
  const buffered = o.maxBuffered ?? 256;
  const rawWrites = o.rawWrites ?? true;
  const chunkBytes = o.chunkBytes ?? 64 * 1024;
  const lostCounter = o.metrics?.counter(catalog.hubbleFlowsLost);
  const clients = o.metrics?.gauge(catalog.hubbleClients);
  /** How to end each open stream (server stop). */
  const closers = new Set<() => void>();
  const track = (rpc: string, close: () => void): (() => void) => {
    closers.add(close);
    clients?.inc({ rpc });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      closers.delete(close);
      clients?.dec({ rpc });
    };
  };
  const uptimeNs = (): number => Number(process.hrtime.bigint() - started);

  const serialize = (o.protos.observer['GetFlows'] as grpc.MethodDefinition<HubbleObject, HubbleObject>).responseSerialize;
  const encoded = createEncodedFlows(ring, nodeName, o.protos.flowsFrame, serialize, Math.min(ring.capacity, 4096));
  /** GetFlows calls on the raw path; the encoded flows are forgotten when the last one ends. */
  let rawCalls = 0;
  const respond = (p: PickedFlow): HubbleObject => ({ flow: p.hubble, node_name: nodeName, time: timestamp(p.timeMs) });

  async function getFlows(call: FlowsCall): Promise<void> {
    const req = call.request;
    let matcher: FlowMatcher;
    try {
      matcher = compileFlowFilters(req['whitelist'], req['blacklist']);
    } catch (e) {
      const msg = e instanceof FilterError ? e.message : `bad filter: ${(e as Error).message}`;
      call.emit('error', grpcError(grpc.status.INVALID_ARGUMENT, msg));
      return;
    }
    // `hubble observe --all` asks for 2^64-1 flows: every flow held.
    const asked = Number(req['number'] ?? 0);
    const number = asked >= Number.MAX_SAFE_INTEGER ? 0 : asked;
    const wantsHistory = asked > 0;
    const first = req['first'] === true;
    const follow = req['follow'] === true;
    // Bounds compared as the client sees times: whole (seconds, nanos) of each flow's timestamp.
    const bound = (v: unknown): { s: number; n: number } | undefined => {
      if (timestampMs(v) === undefined) return undefined;
      const b = v as { seconds?: unknown; nanos?: unknown };
      return { s: Number(b.seconds ?? 0), n: Number(b.nanos ?? 0) };
    };
    const since = bound(req['since']);
    const until = bound(req['until']);
    if (!Number.isSafeInteger(number) || number < 0) {
      call.emit('error', grpcError(grpc.status.INVALID_ARGUMENT, `number: ${String(req['number'])} is not a count of flows`));
      return;
    }
    const raw = rawWrites ? rawStreamOf(call) : undefined;
    if (raw) {
      // grpc-js sends the headers (and later the status and trailers); the messages go below it.
      call.sendMetadata(new grpc.Metadata());
      rawCalls++;
    }
    const sink = raw ? rawSink(raw, chunkBytes, serialize, respond) : grpcSink(call, buffered, respond);
    let cancelled = false;
    let wake: (() => void) | undefined;
    const stop = (): void => {
      cancelled = true;
      untrack();
      wake?.();
    };
    const untrack = track('GetFlows', () => {
      if (cancelled) return;
      stop();
      call.end();
    });
    call.on('cancelled', stop);
    call.on('close', stop);
    const cmp = (ms: number, b: { s: number; n: number }): number => {
      const ts = timestamp(ms);
      return ts.seconds !== b.s ? ts.seconds - b.s : ts.nanos - b.n;
    };
    const afterUntil = (ms: number): boolean => until !== undefined && cmp(ms, until) > 0;
    const inRange = (ms: number): boolean => (since === undefined || cmp(ms, since) >= 0) && !afterUntil(ms);
    /** The flow at seq when it is in range and matches, else undefined. */
    const pick = (seq: number): PickedFlow | undefined => {
      const f = ring.at(seq);
      if (f === undefined || !inRange(f.timeMs)) return undefined;
      const p: PickedFlow | undefined = raw ? encoded.at(seq) : { hubble: toHubbleFlow(f, nodeName), timeMs: f.timeMs };
      return p !== undefined && matcher.match(p.hubble) ? p : undefined;
    };
    try {
      const head = ring.head();
      const tail = ring.tail();
      // History: picked in one synchronous pass (nothing is written meanwhile), then sent.
      const history: PickedFlow[] = [];
      if (!follow || wantsHistory || since !== undefined) {
        if (first || number === 0) {
          for (let s = tail; s < head && (number === 0 || history.length < number); s++) {
            const p = pick(s);
            if (p) history.push(p);
          }
        } else {
          for (let s = head - 1; s >= tail && history.length < number; s--) {
            const p = pick(s);
            if (p) history.push(p);
          }
          history.reverse();
        }
      }
      for (const p of history) {
        if (cancelled) return;
        if (sink.add(p)) await sink.flush();
      }
      await sink.flush();
      if (!follow) {
        if (!cancelled) call.end();
        return;
      }
      let cursor = head;
      while (!cancelled) {
        if (cursor >= ring.head()) {
          await new Promise<void>((resolve) => {
            const cancel = ring.onWrite(resolve);
            wake = (): void => {
              cancel();
              resolve();
            };
          });
          wake = undefined;
          continue;
        }
        const oldest = ring.tail();
        if (cursor < oldest) {
          const lost = oldest - cursor;
          cursor = oldest;
          lostCounter?.inc({}, lost);
          sink.message({ lost_events: { source: 'HUBBLE_RING_BUFFER', num_events_lost: lost }, node_name: nodeName, time: timestamp(Date.now()) });
        }
        const end = Math.min(ring.head(), cursor + slice);
        let full = false;
        for (; cursor < end && !cancelled; ) {
          const seq = cursor++;
          const f = ring.at(seq);
          if (f === undefined) break;
          if (afterUntil(f.timeMs)) {
            await sink.flush();
            if (!cancelled) call.end();
            return;
          }
          const p = pick(seq);
          // Full: send, and when the client reads slower than flows come wait for it; the ring
          // carries on meanwhile (a LostEvent tells the client what it missed).
          if (p !== undefined && sink.add(p)) {
            full = true;
            break;
          }
        }
        if (!(await sink.flush()) && !full) await new Promise<void>((r) => setImmediate(r));
      }
    } catch (e) {
      log.warn('GetFlows stream failed', { error: (e as Error).message });
      if (!cancelled) call.emit('error', grpcError(grpc.status.INTERNAL, (e as Error).message));
    } finally {
      untrack();
      if (raw && --rawCalls === 0) encoded.clear();
    }
  }

  const serverStatus = (_call: unknown, cb: grpc.sendUnaryData<HubbleObject>): void => {
    const st = ring.stats();
    // flows_rate: flows of the last minute still in the ring, per second (as Hubble computes it).
    const since = Date.now() - 60_000;
    let recent = 0;
    for (let s = ring.head() - 1; s >= ring.tail(); s--) {
      const f = ring.at(s);
      if (f === undefined || f.timeMs < since) break;
      recent++;
    }
    cb(null, { num_flows: st.size, max_flows: st.capacity, seen_flows: st.seen, uptime_ns: uptimeNs(), version: o.version, flows_rate: recent / 60 });
  };

  const getNodes = (_call: unknown, cb: grpc.sendUnaryData<HubbleObject>): void => {
    const st = ring.stats();
    const self = o.peers.list().find((p) => p.name === nodeName);
    cb(null, {
      nodes: [{
        name: nodeName, version: o.version, address: self?.address ?? '', state: 'NODE_CONNECTED',
        uptime_ns: uptimeNs(), num_flows: st.size, max_flows: st.capacity, seen_flows: st.seen,
      }],
    });
  };

  const notify = (call: grpc.ServerWritableStream<unknown, HubbleObject>): void => {
    const untrack = track('Notify', () => {
      end();
      call.end();
    });
    // Changes during the first listing are queued behind it: a peer is never deleted before added.
    for (const p of o.peers.list()) call.write({ name: p.name, address: p.address, type: 'PEER_ADDED' });
    const sub = o.peers.subscribe((type, p) => call.write({ name: p.name, address: p.address, type }));
    const end = (): void => {
      sub[Symbol.dispose]();
      untrack();
    };
    call.on('cancelled', end);
    call.on('close', end);
    call.on('error', end);
  };

  const server = new grpc.Server();
  server.addService(o.protos.observer, {
    GetFlows: (call: FlowsCall) => void getFlows(call),
    ServerStatus: serverStatus,
    GetNodes: getNodes,
    GetAgentEvents: unimplemented('GetAgentEvents'),
    GetDebugEvents: unimplemented('GetDebugEvents'),
    GetNamespaces: unimplemented('GetNamespaces'),
  });
  server.addService(o.protos.peer, { Notify: notify });
  // gRPC health (what `hubble status` asks first): SERVING for the whole server and our services.
  const served = new Set(['', 'hubble.server.Observer', 'observer.Observer', 'peer.Peer']);
  const healthOf = (req: HubbleObject): string => (served.has(String(req['service'] ?? '')) ? 'SERVING' : 'SERVICE_UNKNOWN');
  server.addService(o.protos.health, {
    Check: (call: grpc.ServerUnaryCall<HubbleObject, HubbleObject>, cb: grpc.sendUnaryData<HubbleObject>) => {
      const status = healthOf(call.request);
      if (status === 'SERVICE_UNKNOWN') cb(grpcError(grpc.status.NOT_FOUND, `unknown service ${String(call.request['service'])}`));
      else cb(null, { status });
    },
    Watch: (call: grpc.ServerWritableStream<HubbleObject, HubbleObject>) => {
      const untrack = track('Watch', () => call.end());
      call.write({ status: healthOf(call.request) });
      call.on('cancelled', untrack);
      call.on('close', untrack);
    },
  });

  const bind = (addr: string): Promise<number> => new Promise((resolve, reject) => {
    server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
  });
  let port = 0;
  try {
    if (o.listen) {
      const host = o.listen.host;
      if (host === '') {
        try {
          port = await bind(`[::]:${o.listen.port}`);
        } catch {
          port = await bind(`0.0.0.0:${o.listen.port}`);
        }
      } else {
        port = await bind(`${host.includes(':') ? `[${host}]` : host}:${o.listen.port}`);
      }
    }
    if (o.socketPath) {
      mkdirSync(dirname(o.socketPath), { recursive: true });
      rmSync(o.socketPath, { force: true });
      await bind(`unix:${o.socketPath}`);
    }
  } catch (e) {
    server.forceShutdown();
    throw e;
  }
  log.info('hubble server listening', { ...(o.listen ? { address: `${o.listen.host || '*'}:${port}` } : {}), ...(o.socketPath ? { socket: o.socketPath } : {}), maxFlows: ring.capacity });

  return {
    port,
    async [Symbol.asyncDispose]() {
      // Followers never end by themselves: end them, then give the server a moment to finish.
      for (const close of [...closers]) close();
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 1000);
        server.tryShutdown(() => {
          clearTimeout(t);
          resolve();
        });
      });
      if (o.socketPath) rmSync(o.socketPath, { force: true });
    },
  };
}
