/**
 * The agent's Hubble service (hubble.enabled): the flow ring and the namespaces seen in flows
 * (GetNamespaces), a consumer of the node's flow pipeline after the enricher (src/pipeline), and the
 * gRPC server (Observer, Peer) that serves it, with the peer list from the cluster's Nodes (handed in
 * when the service is built: the node's one Nodes watch, peers.ts) or this node alone.
 */
import { hostname } from 'node:os';
import type { HubbleConfig } from '../../config/index.js';
import type { FlowBatch, FlowConsumer } from '../../flow/index.js';
import type { HubbleProtoFiles } from '../../flow/hubble/index.js';
import type { Informer } from '../../k8s/index.js';
import type { Logger } from '../../log/index.js';
import { catalog, type MetricsRegistry } from '../../metrics/index.js';
import { nodePeers, selfPeer, type PeerNode } from './peers.js';
import { loadHubbleProtos } from './proto.js';
import { createNamespaceTracker } from './namespaces.js';
import { createFlowRing } from './ring.js';
import { startHubbleServer, type HubbleServer } from './server.js';
import type { StoredFlowSource } from './history.js';

export interface HubbleService extends AsyncDisposable {
  /** Takes enriched flows (a consumer of the flow pipeline). */
  readonly ring: FlowConsumer;
  /** Starts serving (once). */
  listen(): Promise<HubbleServer>;
}

export interface HubbleServiceOptions {
  readonly config: HubbleConfig;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
  /** This node's name (NODE_NAME); default the host name. */
  readonly nodeName: string | undefined;
  /** The cluster's Nodes (the node's one Nodes watch): the peers; undefined (no Kubernetes): this node alone. */
  readonly nodes: Informer<PeerNode> | undefined;
  readonly version: string;
  /** Hubble's .proto files, parsed once and shared with the flow-log export (src/flow/hubble's hubbleProtoFiles), or their folder. */
  readonly protoFiles: HubbleProtoFiles | string;
  /** The stored flow logs GetFlows reads beyond the ring (hubble.history.fromExport: src/export's createExportHistory). */
  readonly history?: StoredFlowSource | undefined;
}

export function createHubbleService(o: HubbleServiceOptions): HubbleService {
  const cfg = o.config;
  const log = o.log.child({ component: 'hubble' });
  const ringStore = createFlowRing(cfg.maxFlows);
  const seen = o.metrics.counter(catalog.hubbleFlowsSeen);
  const namespaces = createNamespaceTracker(cfg.clusterName);
  const ring: FlowConsumer = {
    consume(batch: FlowBatch): void {
      ringStore.consume(batch);
      namespaces.consume(batch);
      seen.inc({}, batch.flows.length);
    },
  };
  const nodeName = o.nodeName ?? (hostname() || 'localhost');
  let port = cfg.listen.port;
  let server: HubbleServer | undefined;
  return {
    ring,
    async listen() {
      const protos = loadHubbleProtos(o.protoFiles);
      const peers = o.nodes ? nodePeers(o.nodes, () => port) : selfPeer(nodeName, cfg.listen.host, () => port);
      server = await startHubbleServer({
        protos, ring: ringStore, listen: cfg.listen, socketPath: cfg.socketPath, nodeName, version: `${o.version}+retina-ts`, peers, log, metrics: o.metrics,
        clusterName: cfg.clusterName, namespaces: () => namespaces.list(), ...(cfg.tls ? { tls: cfg.tls } : {}), history: o.history,
      });
      if (port === 0) port = server.port;
      return server;
    },
    async [Symbol.asyncDispose]() {
      await server?.[Symbol.asyncDispose]();
    },
  };
}
