/**
 * The agent's Hubble service, wired by agent.ts when `hubble.enabled`: the flow ring (fed with the
 * enriched flows of every plugin, with or without pod-level metrics), the gRPC server (Observer,
 * Peer) and the peer list: the API server's Nodes with their InternalIP and this service's port,
 * or this node alone without Kubernetes.
 */
import { networkInterfaces, hostname } from 'node:os';
import type { AgentConfig } from '../config/index.js';
import { cacheLookup, createEnricher } from '../enricher/index.js';
import type { FlowBatch, FlowConsumer } from '../flow/index.js';
import { createInformerFactory, resources, type NodeWire } from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import { catalog, type MetricsRegistry } from '../metrics/index.js';
import { createFlowRing, loadHubbleProtos, startHubbleServer, type HubblePeer, type HubbleServer, type PeerChange, type PeerSource } from '../server/hubble/index.js';
import type { AgentKubernetes } from './agent-k8s.js';
import { packageFile } from './command.js';
import { guarded } from './flow-stages.js';

export interface Hubble extends AsyncDisposable {
  /** Takes enriched flows (after the enricher). */
  readonly ring: FlowConsumer;
  /** Where plugins hand their flows when pod-level metrics are off: an enricher before the ring. */
  flowsWithoutPodLevel(): FlowConsumer;
  /** Starts serving; call once the flow path is built. */
  listen(): Promise<HubbleServer>;
}

interface SlimNode {
  readonly name: string;
  readonly ip: string;
}

function nodeIp(n: NodeWire): SlimNode | undefined {
  const addrs = n.status?.addresses ?? [];
  const a = addrs.find((x) => x?.type === 'InternalIP' && x.address) ?? addrs.find((x) => x?.type === 'ExternalIP' && x.address);
  return a ? Object.freeze({ name: n.metadata.name, ip: a.address }) : undefined;
}

const hostPort = (ip: string, port: number): string => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

function localAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4') return a.address;
  }
  return '127.0.0.1';
}

export function startHubble(o: { agent: AgentConfig; metrics: MetricsRegistry; log: Logger; k8s: AgentKubernetes | undefined; version: string }): Hubble {
  const cfg = o.agent.hubble;
  const log = o.log.child({ component: 'hubble' });
  const ringStore = createFlowRing(cfg.maxFlows);
  const seen = o.metrics.counter(catalog.hubbleFlowsSeen);
  const ring: FlowConsumer = {
    consume(batch: FlowBatch): void {
      ringStore.consume(batch);
      seen.inc({}, batch.flows.length);
    },
  };
  const nodeName = o.k8s?.nodeName ?? (hostname() || 'localhost');
  let port = cfg.listen.port;
  let server: HubbleServer | undefined;
  let disposeK8s: (() => Promise<void>) | undefined;

  const peerSource = (): PeerSource => {
    const k8s = o.k8s;
    if (!k8s) {
      const self = (): HubblePeer => ({ name: nodeName, address: hostPort(cfg.listen.host || localAddress(), port) });
      return { list: () => [self()], subscribe: () => ({ [Symbol.dispose]: () => undefined }) };
    }
    const factory = createInformerFactory({ client: k8s.client, log, initialState: 'stream' });
    const nodes = factory.informer({ resource: resources.nodes, transform: nodeIp, equal: (a: SlimNode, b: SlimNode) => a.ip === b.ip });
    factory.start();
    disposeK8s = async () => factory[Symbol.asyncDispose]();
    const peer = (n: SlimNode): HubblePeer => ({ name: n.name, address: hostPort(n.ip, port) });
    return {
      list: () => nodes.list().map(peer),
      subscribe(onChange: (type: PeerChange, p: HubblePeer) => void): Disposable {
        return nodes.subscribe({
          added: (_k, n) => onChange('PEER_ADDED', peer(n)),
          updated: (_k, n) => onChange('PEER_UPDATED', peer(n)),
          deleted: (_k, n) => onChange('PEER_DELETED', peer(n)),
        });
      },
    };
  };

  return {
    ring,
    flowsWithoutPodLevel() {
      const lookup = o.k8s ? cacheLookup(o.k8s.cache) : { byIp: () => undefined };
      return guarded(createEnricher(lookup, guarded(ring, 'pipeline', 'hubble', o.metrics, log)), 'pipeline', 'enricher', o.metrics, log);
    },
    async listen() {
      const protos = loadHubbleProtos(packageFile('proto/hubble'));
      const peers = peerSource();
      try {
        server = await startHubbleServer({
          protos, ring: ringStore, listen: cfg.listen, socketPath: cfg.socketPath, nodeName, version: `${o.version}+retina-ts`, peers, log, metrics: o.metrics,
        });
      } catch (e) {
        await disposeK8s?.();
        throw e;
      }
      if (port === 0) port = server.port;
      return server;
    },
    async [Symbol.asyncDispose]() {
      await server?.[Symbol.asyncDispose]();
      await disposeK8s?.();
    },
  };
}
