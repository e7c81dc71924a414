/**
 * Where Hubble's Peer service finds its peers: the cluster's Nodes (the agent's one Nodes watch,
 * handed in by src/pipeline), each at its first address (InternalIPs first) and this service's
 * port; or, without Kubernetes, this node alone.
 */
import { networkInterfaces } from 'node:os';
import type { Informer } from '../../k8s/index.js';
import type { HubblePeer, PeerChange, PeerSource } from './server.js';

/** What a peer needs of a Node (the IP cache's NodeEndpoint has it). */
export interface PeerNode {
  readonly name: string;
  /** InternalIPs first, then ExternalIPs. */
  readonly ips: readonly string[];
}

export const hostPort = (ip: string, port: number): string => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

/** `port()`: the port the service listens on (known once it listens, when configured as 0). */
export function nodePeers(nodes: Informer<PeerNode>, port: () => number): PeerSource {
  const peer = (n: PeerNode): HubblePeer | undefined => (n.ips[0] === undefined ? undefined : { name: n.name, address: hostPort(n.ips[0], port()) });
  return {
    list: () => nodes.list().flatMap((n) => peer(n) ?? []),
    subscribe(onChange: (type: PeerChange, p: HubblePeer) => void): Disposable {
      const on = (type: PeerChange) => (_k: string, n: PeerNode): void => {
        const p = peer(n);
        if (p) onChange(type, p);
      };
      // A Node without an address is no peer: gaining one adds it, losing the last deletes it.
      const updated = (_k: string, n: PeerNode, old: PeerNode): void => {
        const now = peer(n);
        const before = peer(old);
        if (now) onChange(before ? 'PEER_UPDATED' : 'PEER_ADDED', now);
        else if (before) onChange('PEER_DELETED', before);
      };
      return nodes.subscribe({ added: on('PEER_ADDED'), updated, deleted: on('PEER_DELETED') });
    },
  };
}

/** This node alone, at `host` (default: its first non-internal IPv4 address). */
export function selfPeer(name: string, host: string, port: () => number): PeerSource {
  const self = (): HubblePeer => ({ name, address: hostPort(host || localAddress(), port()) });
  return { list: () => [self()], subscribe: () => ({ [Symbol.dispose]: () => undefined }) };
}

function localAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4') return a.address;
  }
  return '127.0.0.1';
}
