/**
 * rtnetlink link dumps: every interface of this network namespace with its ifindex, name, kind
 * (IFLA_INFO_KIND: veth, bridge, ...), master (IFLA_MASTER: the bridge of a bridge port) and counters (IFLA_STATS64, the struct the files under
 * /sys/class/net/<if>/statistics/ are read from), through one NETLINK_ROUTE socket and a few recv
 * calls whatever the number of interfaces. A node with a few hundred pod veths costs one dump per
 * read instead of thousands of file reads. The parser is pure (tested on bytes); the socket is
 * opened by `openLinkDumper()` (rtnetlink.ts), never at import time.
 */
import { NLMSG_HDRLEN, attrEnd, attrLength, attrType, cString, dumpRequest, openRouteSocket, walkDump } from './rtnetlink.js';

/** The counters of struct rtnl_link_stats64, in order: the names of the files in statistics/. */
export const LINK_STAT_NAMES = [
  'rx_packets', 'tx_packets', 'rx_bytes', 'tx_bytes', 'rx_errors', 'tx_errors', 'rx_dropped', 'tx_dropped', 'multicast', 'collisions',
  'rx_length_errors', 'rx_over_errors', 'rx_crc_errors', 'rx_frame_errors', 'rx_fifo_errors', 'rx_missed_errors', 'tx_aborted_errors',
  'tx_carrier_errors', 'tx_fifo_errors', 'tx_heartbeat_errors', 'tx_window_errors', 'rx_compressed', 'tx_compressed', 'rx_nohandler',
] as const;

export interface LinkInfo {
  readonly ifindex: number;
  readonly name: string;
  /** IFLA_INFO_KIND ('veth', 'bridge', ...); '' for devices without one (a physical NIC, lo). */
  readonly kind: string;
  /** LINK_STAT_NAMES' values, or undefined when the kernel sent none. */
  readonly stats: readonly number[] | undefined;
  /** IFLA_MASTER: the ifindex of the bridge (or bond, VRF) this link is enslaved to; absent when none. */
  readonly master?: number;
}

const RTM_NEWLINK = 16;
const RTM_GETLINK = 18;
const IFINFOMSG_LEN = 16;
const IFLA_IFNAME = 3;
const IFLA_MASTER = 10;
const IFLA_LINKINFO = 18;
const IFLA_STATS64 = 23;
const IFLA_INFO_KIND = 1;

function kindOf(v: DataView, off: number, end: number): string {
  for (let a = off, next; (next = attrEnd(v, a, end)) > 0; a = next) {
    if (attrType(v, a) === IFLA_INFO_KIND) return cString(v, a + 4, attrLength(v, a));
  }
  return '';
}

/**
 * Parses the messages in `v[0, len)` of the dump with sequence number `seq` into `out`. Returns
 * true when the dump is complete (NLMSG_DONE); throws on NLMSG_ERROR (with the errno's name) and on
 * a truncated message.
 */
export function parseLinkMessages(v: DataView, len: number, seq: number, out: LinkInfo[]): boolean {
  return walkDump(v, len, seq, 'RTM_GETLINK', (type, m, mlen) => {
    if (type !== RTM_NEWLINK || mlen < NLMSG_HDRLEN + IFINFOMSG_LEN) return;
    let name = '';
    let kind = '';
    let stats: number[] | undefined;
    let master = 0;
    for (let a = m + NLMSG_HDRLEN + IFINFOMSG_LEN, next; (next = attrEnd(v, a, m + mlen)) > 0; a = next) {
      const atype = attrType(v, a);
      const alen = attrLength(v, a);
      if (atype === IFLA_IFNAME) name = cString(v, a + 4, alen);
      else if (atype === IFLA_MASTER && alen >= 4) master = v.getUint32(a + 4, true);
      else if (atype === IFLA_LINKINFO) kind = kindOf(v, a + 4, a + 4 + alen);
      else if (atype === IFLA_STATS64 && alen >= LINK_STAT_NAMES.length * 8) {
        stats = new Array<number>(LINK_STAT_NAMES.length);
        // 4-byte aligned only: two u32 halves (exact below 2^53).
        for (let i = 0; i < LINK_STAT_NAMES.length; i++) stats[i] = v.getUint32(a + 4 + i * 8, true) + v.getUint32(a + 8 + i * 8, true) * 4294967296;
      }
    }
    out.push({ ifindex: v.getInt32(m + NLMSG_HDRLEN + 4, true), name, kind, stats, ...(master ? { master } : {}) });
  });
}

/** The request: nlmsghdr + ifinfomsg (AF_UNSPEC: every link), 32 bytes. */
export function linkDumpRequest(seq: number): Uint8Array {
  return dumpRequest(RTM_GETLINK, seq, IFINFOMSG_LEN).bytes;
}

export interface LinkDumper extends Disposable {
  /** Every link of this network namespace now. Throws when the kernel refuses or the socket fails. */
  dump(): LinkInfo[];
}

/** Opens a NETLINK_ROUTE socket for link dumps (closed on dispose); see rtnetlink.ts. */
export function openLinkDumper(): LinkDumper {
  const socket = openRouteSocket();
  let seq = 0;
  return {
    dump() {
      seq = (seq + 1) >>> 0;
      const out: LinkInfo[] = [];
      const at = seq;
      socket.dump(linkDumpRequest(at), (v, n) => parseLinkMessages(v, n, at, out));
      return out;
    },
    [Symbol.dispose]: () => socket[Symbol.dispose](),
  };
}
