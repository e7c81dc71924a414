/**
 * What every rtnetlink dump here shares (links in netlink.ts, tc filters in tc-filters.ts): the
 * request header, the walk over a dump's messages and over their attributes, and one NETLINK_ROUTE
 * socket that sends a request and reads the answer in a few recv calls. Parsers stay pure (tested on
 * bytes); a socket is opened by `openRouteSocket()`, never at import time.
 */
import koffi from '../koffi.js';
import { SOCK_CLOEXEC, errnoName, libcLibrary, loadLibc, type NativeBuffer } from './libc.js';

export const NLMSG_HDRLEN = 16;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const NLM_F_REQUEST = 0x1;
const NLM_F_DUMP = 0x300;
const NLA_TYPE_MASK = 0x3fff;

export const align4 = (n: number): number => (n + 3) & ~3;

/** A dump the kernel refused (NLMSG_ERROR, naming the request and errno) or a reply that does not parse. */
export class NetlinkError extends Error {
  override readonly name = 'NetlinkError';
}

export function cString(v: DataView, off: number, len: number): string {
  let end = off;
  while (end < off + len && v.getUint8(end) !== 0) end++;
  return Buffer.from(v.buffer, v.byteOffset + off, end - off).toString('utf8');
}

/**
 * Attribute walks without callbacks (the walk is inlined where it is used):
 * `for (let a = off, next; (next = attrEnd(v, a, end)) > 0; a = next)` visits each attribute in
 * `v[off, end)`; its type is `attrType(v, a)`, its payload starts at `a + 4` and is `attrLength(v, a)` long.
 */
export function attrEnd(v: DataView, a: number, end: number): number {
  if (a + 4 > end) return -1;
  const len = v.getUint16(a, true);
  return len < 4 || a + len > end ? -1 : a + align4(len);
}
export const attrType = (v: DataView, a: number): number => v.getUint16(a + 2, true) & NLA_TYPE_MASK;
export const attrLength = (v: DataView, a: number): number => v.getUint16(a, true) - 4;

/**
 * Walks the messages in `v[0, len)` that belong to the dump with sequence number `seq`, calling
 * `onMessage(type, offset, length)` for each data message. Returns true at NLMSG_DONE; throws on
 * NLMSG_ERROR (naming `request` and the errno) and on a truncated message.
 */
export function walkDump(v: DataView, len: number, seq: number, request: string, onMessage: (type: number, at: number, mlen: number) => void): boolean {
  for (let m = 0; m + NLMSG_HDRLEN <= len;) {
    const mlen = v.getUint32(m, true);
    const type = v.getUint16(m + 4, true);
    if (mlen < NLMSG_HDRLEN || m + mlen > len) throw new NetlinkError(`netlink: truncated message (${mlen} bytes at ${m} of ${len})`);
    if (v.getUint32(m + 8, true) === seq) {
      if (type === NLMSG_DONE) return true;
      if (type === NLMSG_ERROR) {
        if (mlen < NLMSG_HDRLEN + 4) throw new NetlinkError(`netlink: NLMSG_ERROR of ${mlen} bytes at ${m}, shorter than its errno`);
        const errno = -v.getInt32(m + NLMSG_HDRLEN, true);
        if (errno !== 0) throw new NetlinkError(`netlink: ${request} failed: ${errnoName(errno)}`);
      } else onMessage(type, m, mlen);
    }
    m += align4(mlen);
  }
  return false;
}

/** A dump request of `type` with a zeroed body of `bodyLength` bytes (the caller fills it in through `view`). */
export function dumpRequest(type: number, seq: number, bodyLength: number): { bytes: Uint8Array; view: DataView } {
  const bytes = new Uint8Array(NLMSG_HDRLEN + bodyLength);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, bytes.length, true);
  view.setUint16(4, type, true);
  view.setUint16(6, NLM_F_REQUEST | NLM_F_DUMP, true);
  view.setUint32(8, seq, true);
  return { bytes, view };
}

export interface RouteSocket extends Disposable {
  /**
   * Sends `request` and hands what arrives to `parse(view, length)` until it returns true (the dump
   * is complete). Throws when the socket fails or the dump does not end.
   */
  dump(request: Uint8Array, parse: (v: DataView, len: number) => boolean): void;
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

let calls: { send: Fn; recv: Fn } | undefined;
/** send and recv, declared once (tc-filters.ts opens a socket per dump; link-events.ts reads with recv). */
export function socketCalls(): { send: Fn; recv: Fn } {
  if (calls) return calls;
  const lib = libcLibrary();
  calls = {
    send: lib.func('long send(int fd, const uint8_t *buf, size_t len, int flags)') as Fn,
    recv: lib.func('long recv(int fd, void *buf, size_t len, int flags)') as Fn,
  };
  return calls;
}

/**
 * Opens a NETLINK_ROUTE socket for dumps (closed on dispose). The kernel writes a dump while the
 * agent reads it, so each recv has data at once; it is made non-blocking anyway, and a dump that
 * stalls fails instead of blocking the event loop. The kernel sizes a dump's chunks to the largest
 * recv buffer it has seen on the socket (at least about 8 KiB for the first), so `recvBytes` of 16
 * KiB or more always holds a chunk; a larger buffer means fewer recv calls for a large dump.
 */
export function openRouteSocket(recvBytes = RECV_BUFFER): RouteSocket {
  const libc = loadLibc();
  const { send, recv } = socketCalls();
  const fd = libc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) throw new Error(`cannot open a netlink socket: ${errnoName(-fd)}`);
  let buf: NativeBuffer | undefined = libc.alloc(recvBytes);
  return {
    dump(request, parse) {
      if (!buf) throw new Error('the netlink socket is closed');
      if ((send(fd, request, request.length, 0) as number) < 0) throw new Error(`netlink send failed: ${errnoName(koffi.errno())}`);
      for (let reads = 0; reads < 100_000; reads++) {
        const n = Number(recv(fd, buf.ptr, buf.size, MSG_DONTWAIT));
        if (n < 0) {
          const errno = koffi.errno();
          if (errno === EINTR) continue;
          throw new Error(`netlink recv failed: ${errnoName(errno)}`);
        }
        if (n === 0) throw new Error('netlink: the socket closed mid-dump');
        if (parse(buf.view, n)) return;
      }
      throw new Error('netlink: the dump did not end');
    },
    [Symbol.dispose]() {
      if (!buf) return;
      buf.free();
      buf = undefined;
      libc.close(fd);
    },
  };
}
