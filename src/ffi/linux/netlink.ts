/**
 * rtnetlink link dumps: every interface of this network namespace with its ifindex, name, kind
 * (IFLA_INFO_KIND: veth, bridge, ...) and counters (IFLA_STATS64, the struct the files under
 * /sys/class/net/<if>/statistics/ are read from), through one NETLINK_ROUTE socket and a few recv
 * calls whatever the number of interfaces. A node with a few hundred pod veths costs one dump per
 * read instead of thousands of file reads. The parser is pure (tested on bytes); the socket is
 * opened by `openLinkDumper()`, never at import time.
 */
import koffi from 'koffi';
import { SOCK_CLOEXEC, errnoName, libcLibrary, loadLibc, type NativeBuffer } from './libc.js';

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
}

const NLMSG_HDRLEN = 16;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const RTM_NEWLINK = 16;
const RTM_GETLINK = 18;
const NLM_F_REQUEST = 0x1;
const NLM_F_DUMP = 0x300;
const IFINFOMSG_LEN = 16;
const IFLA_IFNAME = 3;
const IFLA_LINKINFO = 18;
const IFLA_STATS64 = 23;
const IFLA_INFO_KIND = 1;
const NLA_TYPE_MASK = 0x3fff;

const align4 = (n: number): number => (n + 3) & ~3;

function cString(v: DataView, off: number, len: number): string {
  let end = off;
  while (end < off + len && v.getUint8(end) !== 0) end++;
  return Buffer.from(v.buffer, v.byteOffset + off, end - off).toString('utf8');
}

function kindOf(v: DataView, off: number, end: number): string {
  for (let a = off; a + 4 <= end;) {
    const len = v.getUint16(a, true);
    if (len < 4) break;
    if ((v.getUint16(a + 2, true) & NLA_TYPE_MASK) === IFLA_INFO_KIND) return cString(v, a + 4, len - 4);
    a += align4(len);
  }
  return '';
}

/**
 * Parses the messages in `v[0, len)` of the dump with sequence number `seq` into `out`. Returns
 * true when the dump is complete (NLMSG_DONE); throws on NLMSG_ERROR (with the errno's name) and on
 * a truncated message.
 */
export function parseLinkMessages(v: DataView, len: number, seq: number, out: LinkInfo[]): boolean {
  for (let m = 0; m + NLMSG_HDRLEN <= len;) {
    const mlen = v.getUint32(m, true);
    const type = v.getUint16(m + 4, true);
    if (mlen < NLMSG_HDRLEN || m + mlen > len) throw new Error(`netlink: truncated message (${mlen} bytes at ${m} of ${len})`);
    if (v.getUint32(m + 8, true) === seq) {
      if (type === NLMSG_DONE) return true;
      if (type === NLMSG_ERROR) {
        const errno = -v.getInt32(m + NLMSG_HDRLEN, true);
        if (errno !== 0) throw new Error(`netlink: RTM_GETLINK failed: ${errnoName(errno)}`);
      } else if (type === RTM_NEWLINK && mlen >= NLMSG_HDRLEN + IFINFOMSG_LEN) {
        const ifindex = v.getInt32(m + NLMSG_HDRLEN + 4, true);
        let name = '';
        let kind = '';
        let stats: number[] | undefined;
        const end = m + mlen;
        for (let a = m + NLMSG_HDRLEN + IFINFOMSG_LEN; a + 4 <= end;) {
          const alen = v.getUint16(a, true);
          if (alen < 4 || a + alen > end) break;
          const atype = v.getUint16(a + 2, true) & NLA_TYPE_MASK;
          if (atype === IFLA_IFNAME) name = cString(v, a + 4, alen - 4);
          else if (atype === IFLA_LINKINFO) kind = kindOf(v, a + 4, a + alen);
          else if (atype === IFLA_STATS64 && alen - 4 >= LINK_STAT_NAMES.length * 8) {
            stats = new Array<number>(LINK_STAT_NAMES.length);
            // 4-byte aligned only: two u32 halves (exact below 2^53).
            for (let i = 0; i < LINK_STAT_NAMES.length; i++) stats[i] = v.getUint32(a + 4 + i * 8, true) + v.getUint32(a + 8 + i * 8, true) * 4294967296;
          }
          a += align4(alen);
        }
        out.push({ ifindex, name, kind, stats });
      }
    }
    m += align4(mlen);
  }
  return false;
}

/** The request: nlmsghdr + ifinfomsg (AF_UNSPEC: every link), 32 bytes. */
export function linkDumpRequest(seq: number): Uint8Array {
  const b = new Uint8Array(NLMSG_HDRLEN + IFINFOMSG_LEN);
  const v = new DataView(b.buffer);
  v.setUint32(0, b.length, true);
  v.setUint16(4, RTM_GETLINK, true);
  v.setUint16(6, NLM_F_REQUEST | NLM_F_DUMP, true);
  v.setUint32(8, seq, true);
  return b;
}

export interface LinkDumper extends Disposable {
  /** Every link of this network namespace now. Throws when the kernel refuses or the socket fails. */
  dump(): LinkInfo[];
}

export const AF_NETLINK = 16;
export const SOCK_RAW = 3;
export const NETLINK_ROUTE = 0;
export const MSG_DONTWAIT = 0x40;
export const EINTR = 4;
/** One recv's buffer: a netlink read never returns more than this. */
export const RECV_BUFFER = 64 * 1024;

/* eslint-disable @typescript-eslint/no-explicit-any -- koffi functions are untyped at this edge */
type Fn = (...args: any[]) => any;

/**
 * Opens a NETLINK_ROUTE socket for link dumps (closed on dispose). The kernel writes a dump while
 * the agent reads it, so each recv has data at once; it is made non-blocking anyway, and a dump that
 * stalls fails instead of blocking the event loop.
 */
export function openLinkDumper(): LinkDumper {
  const lib = libcLibrary();
  const libc = loadLibc();
  const send = lib.func('long send(int fd, const uint8_t *buf, size_t len, int flags)') as Fn;
  const recv = lib.func('long recv(int fd, void *buf, size_t len, int flags)') as Fn;
  const fd = libc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) throw new Error(`cannot open a netlink socket: ${errnoName(-fd)}`);
  let buf: NativeBuffer | undefined = libc.alloc(RECV_BUFFER);
  let seq = 0;
  return {
    dump() {
      if (!buf) throw new Error('the netlink socket is closed');
      seq = (seq + 1) >>> 0;
      const req = linkDumpRequest(seq);
      if ((send(fd, req, req.length, 0) as number) < 0) throw new Error(`netlink send failed: ${errnoName(koffi.errno())}`);
      const out: LinkInfo[] = [];
      for (let reads = 0; reads < 100_000; reads++) {
        const n = Number(recv(fd, buf.ptr, buf.size, MSG_DONTWAIT));
        if (n < 0) {
          const errno = koffi.errno();
          if (errno === EINTR) continue;
          throw new Error(`netlink recv failed: ${errnoName(errno)}`);
        }
        if (n === 0) throw new Error('netlink: the socket closed mid-dump');
        if (parseLinkMessages(buf.view, n, seq, out)) return out;
      }
      throw new Error('netlink: the link dump did not end');
    },
    [Symbol.dispose]() {
      if (!buf) return;
      buf.free();
      buf = undefined;
      libc.close(fd);
    },
  };
}
