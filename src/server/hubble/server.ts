/**
 * The agent's Hubble gRPC server (@grpc/grpc-js): `observer.Observer` (GetFlows, ServerStatus,
 * GetNodes, GetNamespaces; the other RPCs answer UNIMPLEMENTED) and `peer.Peer` (Notify), over the
 * flow ring, on a TCP address (with TLS or mutual TLS as Cilium's: tls.ts) and optionally a unix
 * socket (plaintext, as Cilium's). GetFlows (history, follow, lost events, bounded filters):
 * get-flows.ts; its responses are encoded once per flow and many go in one HTTP/2 write, below
 * grpc-js (frames.ts). GetNamespaces: namespaces.ts.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../../log/index.js';
import { catalog, type MetricWriters } from '../../metrics/index.js';
import { createGetFlows, grpcError, STOPPING, type FlowsCall } from './get-flows.js';
import { DEFAULT_FILTER_LIMITS, type FilterLimits, type HubbleObject } from '../../flow/hubble/index.js';
import { createNamespaceTracker, type HubbleNamespace } from './namespaces.js';
import { hubbleServerCredentials, tlsServerName, type HubbleTlsFiles } from './tls.js';
import type { HubbleProtos } from './proto.js';
import type { FlowRing } from './ring.js';
import type { StoredFlowSource } from './history.js';

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
  /** Bounds on one GetFlows request's filters (default DEFAULT_FILTER_LIMITS). */
  readonly filterLimits?: FilterLimits;
  /** Cilium's cluster-name (default 'default'): GetNamespaces' cluster and the agents' TLS names. */
  readonly clusterName?: string;
  /** What GetNamespaces answers (namespaces.ts); default: the namespaces of the flows the ring holds. */
  readonly namespaces?: () => readonly HubbleNamespace[];
  /** TLS on the TCP address (the unix socket stays plaintext); undefined: plaintext. */
  readonly tls?: HubbleTlsFiles;
  /** Stored flow logs GetFlows reads beyond the ring (history.ts; hubble.history.fromExport); undefined: the ring alone. */
  readonly history?: StoredFlowSource | undefined;
}

export interface HubbleServer extends AsyncDisposable {
  /** The TCP port bound (0 when no TCP address). */
  readonly port: number;
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
  const clusterName = o.clusterName || 'default';
  // Read (and checked) before anything listens: a missing file fails the start, naming it.
  const tls = o.tls ? hubbleServerCredentials(o.tls, log) : undefined;
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
  const getFlows = createGetFlows({
    ring, enums: o.protos.enums, nodeName, log, slice, buffered, lost: lostCounter, track,
    rawWrites, chunkBytes, serialize, flowsFrame: o.protos.flowsFrame, fieldMask: o.protos.fieldMask, cel: o.protos.cel, filterLimits: o.filterLimits ?? DEFAULT_FILTER_LIMITS,
    history: o.history, readFlow: o.protos.readFlowJson,
  });

  const heldNamespaces = (): HubbleNamespace[] => {
    const t = createNamespaceTracker(clusterName);
    const flows = [];
    for (let s = ring.tail(); s < ring.head(); s++) {
      const f = ring.at(s);
      if (f !== undefined) flows.push(f);
    }
    t.consume({ source: 'ring', flows });
    return t.list();
  };
  const namespacesOf = o.namespaces ?? heldNamespaces;
  const getNamespaces = (_call: unknown, cb: grpc.sendUnaryData<HubbleObject>): void => {
    cb(null, { namespaces: namespacesOf().map((n) => ({ cluster: n.cluster, namespace: n.namespace })) });
  };

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
    // Ended by the server's stop with UNAVAILABLE, as GetFlows (get-flows.ts: STOPPING).
    const untrack = track('Notify', () => {
      end();
      call.emit('error', grpcError(grpc.status.UNAVAILABLE, STOPPING));
    });
    // Changes during the first listing are queued behind it: a peer is never deleted before added.
    // With TLS, each peer's name for it (Hubble Relay checks the agent's certificate against it).
    const change = (type: PeerChange, p: HubblePeer): HubbleObject => ({ name: p.name, address: p.address, type, ...(tls ? { tls: { server_name: tlsServerName(p.name, clusterName) } } : {}) });
    for (const p of o.peers.list()) call.write(change('PEER_ADDED', p));
    const sub = o.peers.subscribe((type, p) => call.write(change(type, p)));
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
    GetNamespaces: getNamespaces,
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

  const bind = (addr: string, creds = tls?.credentials ?? grpc.ServerCredentials.createInsecure()): Promise<number> => new Promise((resolve, reject) => {
    server.bindAsync(addr, creds, (err, port) => (err ? reject(err) : resolve(port)));
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
      await bind(`unix:${o.socketPath}`, grpc.ServerCredentials.createInsecure());
    }
  } catch (e) {
    server.forceShutdown();
    tls?.[Symbol.dispose]();
    throw e;
  }
  log.info('hubble server listening', {
    ...(o.listen ? { address: `${o.listen.host || '*'}:${port}`, tls: tls ? (tls.mutual ? 'mutual' : 'server') : 'off' } : {}),
    ...(o.socketPath ? { socket: o.socketPath } : {}), maxFlows: ring.capacity, ...(o.history ? { history: o.history.name } : {}),
  });

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
      tls?.[Symbol.dispose]();
    },
  };
}
