/**
 * A Linux bridge shows some packets twice to the packet socket: a packet a pod sends to the host (its
 * DNS server on the node, or a Service's ClusterIP the host DNATs) arrives on the pod's veth, a bridge
 * port, and then again on the bridge when the bridge passes it up; a packet the host builds for a pod
 * leaves through the bridge and then again through the port. One copy of each is kept: the port's for
 * arrivals, the bridge's for packets leaving. A packet forwarded between two ports is seen arriving on
 * the first port only (leaving the second is a forwarded copy, dropped in the kernel). Found on a real
 * node with the bridge CNI (test/node): every query to the node's DNS server counted twice.
 */
import type { LinkInfo } from '../../../ffi/linux/index.js';

export type LinkRole = 'bridge' | 'port' | 'other';

/** Whether a record seen on a link of `role`, leaving (`outgoing`) or not, is the second copy of a packet. */
export function isBridgeDuplicate(role: LinkRole, outgoing: boolean): boolean {
  return role === 'bridge' ? !outgoing : role === 'port' ? outgoing : false;
}

/** The bridges and bridge ports of this network namespace by ifindex, from link dumps. */
export class LinkRoles {
  private roles = new Map<number, LinkRole>();
  private last = Number.NEGATIVE_INFINITY;

  /**
   * @param dump every link now (openLinkDumper().dump)
   * @param missRefreshMs an ifindex not known (a new pod's veth) dumps again at most this often
   * @param maxAgeMs the table is dumped again when older than this (a port leaving its bridge)
   */
  constructor(private readonly dump: () => readonly LinkInfo[], private readonly now: () => number = Date.now,
    private readonly missRefreshMs = 1000, private readonly maxAgeMs = 30_000) {}

  role(ifindex: number): LinkRole {
    const age = this.now() - this.last;
    let r = this.roles.get(ifindex);
    if (age >= this.maxAgeMs || (r === undefined && age >= this.missRefreshMs)) {
      this.refresh();
      r = this.roles.get(ifindex);
    }
    return r ?? 'other';
  }

  /**
   * Takes a dump made elsewhere (the link watcher's, on every link notification and resync, with the
   * bridge ports it computed from it): the roles then need no dump of their own for the links it holds.
   */
  learn(links: readonly Pick<LinkInfo, 'ifindex' | 'kind' | 'master'>[], ports: ReadonlySet<number> = bridgePorts(links)): void {
    this.last = this.now();
    this.roles = new Map(links.map((l) => [l.ifindex, l.kind === 'bridge' ? 'bridge' : ports.has(l.ifindex) ? 'port' : 'other']));
  }

  private refresh(): void {
    this.learn(this.dump());
  }
}

/** The ifindexes of the links in `links` that are ports of a bridge among them. */
export function bridgePorts(links: readonly Pick<LinkInfo, 'ifindex' | 'kind' | 'master'>[]): Set<number> {
  const bridges = new Set(links.filter((l) => l.kind === 'bridge').map((l) => l.ifindex));
  return new Set(links.filter((l) => l.master !== undefined && bridges.has(l.master)).map((l) => l.ifindex));
}
