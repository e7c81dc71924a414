/**
 * rtnetlink link notifications: a NETLINK_ROUTE socket joined to RTNLGRP_LINK, so the kernel tells
 * this process about every RTM_NEWLINK and RTM_DELLINK of its network namespace as it happens. The
 * socket is watched with koffi.node.poll from the event loop (as the ring buffers are); each wake-up
 * reads everything queued and reports it as one batch. When the socket's queue overflowed (ENOBUFS,
 * an overrun) messages were lost: the batch says so, and the caller re-reads the full state (a link
 * dump). Opened by `watchLinkEvents()`, never at import time.
 */
import koffi from '../koffi.js';
import { SOCK_CLOEXEC, errnoName, libcLibrary, loadLibc, type NativeBuffer } from './libc.js';
import { AF_NETLINK, EINTR, MSG_DONTWAIT, NETLINK_ROUTE, RECV_BUFFER, SOCK_RAW, socketCalls } from './rtnetlink.js';

const SOCK_NONBLOCK = 0o4000;
const RTMGRP_LINK = 1;
const SOL_SOCKET = 1;
const SO_RCVBUF = 8;
const SO_RCVBUFFORCE = 33;
const EAGAIN = 11;
const ENOBUFS = 105;
const RTM_NEWLINK = 16;
const RTM_DELLINK = 17;
const NLMSG_HDRLEN = 16;
/** What the kernel may queue for us between two wake-ups (a burst of pods created at once). */
const SOCKET_BUFFER = 4 << 20;
/** At most this many reads per wake-up; the rest waits for the next turn of the event loop. */
const MAX_READS = 4096;

/** The RTM_NEWLINK and RTM_DELLINK messages in `v[0, len)`. */
export function countLinkMessages(v: DataView, len: number): number {
  let n = 0;
  for (let m = 0; m + NLMSG_HDRLEN <= len;) {
    const mlen = v.getUint32(m, true);
    // A length past the bytes read is a cut (or lying) message: stop. Unchecked, (mlen + 3) & ~3
    // wraps to 0 or below for mlen >= 2^31 - 3, and the loop never ends or reads at a negative offset.
    if (mlen < NLMSG_HDRLEN || mlen > len - m) break;
    const type = v.getUint16(m + 4, true);
    if (type === RTM_NEWLINK || type === RTM_DELLINK) n++;
    m += (mlen + 3) & ~3;
  }
  return n;
}

export interface LinkEventBatch {
  /** RTM_NEWLINK and RTM_DELLINK messages read in this wake-up. */
  readonly messages: number;
  /** The kernel dropped messages (ENOBUFS): re-read the full state. */
  readonly overrun: boolean;
}

export interface LinkEventOptions {
  /** Once per wake-up that read a link message or found an overrun. Must not throw (errors go to onError). */
  readonly onBatch: (b: LinkEventBatch) => void;
  readonly onError: (e: unknown) => void;
}

export interface LinkEvents extends Disposable {
  readonly stats: { readonly wakeups: number; readonly messages: number; readonly overruns: number };
}

/* eslint-disable @typescript-eslint/no-explicit-any -- koffi functions are untyped at this edge */
type Fn = (...args: any[]) => any;

/** Joins RTNLGRP_LINK in this network namespace; the handle leaves it (closes the socket). */
export function watchLinkEvents(o: LinkEventOptions): LinkEvents {
  const lib = libcLibrary();
  const libc = loadLibc();
  const bind = lib.func('int bind(int fd, const uint8_t *addr, uint32_t len)') as Fn;
  const setsockopt = lib.func('int setsockopt(int fd, int level, int name, const int *value, uint32_t len)') as Fn;
  const { recv } = socketCalls();
  const fd = libc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) throw new Error(`cannot open a netlink socket: ${errnoName(-fd)}`);
  let buf: NativeBuffer | undefined;
  try {
    // A larger queue than the default makes overruns rarer; FORCE needs CAP_NET_ADMIN, which the agent has.
    if ((setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, [SOCKET_BUFFER], 4) as number) < 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, [SOCKET_BUFFER], 4);
    const addr = new Uint8Array(12);
    const av = new DataView(addr.buffer);
    av.setUint16(0, AF_NETLINK, true);
    av.setUint32(8, RTMGRP_LINK, true);
    if ((bind(fd, addr, addr.length) as number) < 0) throw new Error(`cannot join the netlink link group: ${errnoName(koffi.errno())}`);
    buf = libc.alloc(RECV_BUFFER);
  } catch (e) {
    libc.close(fd);
    throw e;
  }
  const stats = { wakeups: 0, messages: 0, overruns: 0 };
  const drain = (): void => {
    if (!buf) return;
    stats.wakeups++;
    let messages = 0;
    let overrun = false;
    for (let reads = 0; reads < MAX_READS; reads++) {
      const n = Number(recv(fd, buf.ptr, buf.size, MSG_DONTWAIT));
      if (n > 0) {
        messages += countLinkMessages(buf.view, n);
        continue;
      }
      if (n === 0) break;
      const errno = koffi.errno();
      if (errno === EINTR) continue;
      if (errno === ENOBUFS) {
        overrun = true;
        continue;
      }
      if (errno !== EAGAIN) o.onError(new Error(`netlink link events: recv failed: ${errnoName(errno)}`));
      break;
    }
    stats.messages += messages;
    if (overrun) stats.overruns++;
    if (messages || overrun) o.onBatch({ messages, overrun });
  };
  const poller = koffi.node.poll(fd, { readable: true }, () => {
    try {
      drain();
    } catch (e) {
      o.onError(e); // never across the FFI callback
    }
  });
  return {
    stats,
    [Symbol.dispose]() {
      if (!buf) return;
      poller.close();
      buf.free();
      buf = undefined;
      libc.close(fd);
    },
  };
}
