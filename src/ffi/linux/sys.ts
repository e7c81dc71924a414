/**
 * The libc calls the eBPF data plane needs beyond libc.ts's (mmap for ring buffers, packet sockets
 * for socket filters, interface names), declared on libc.ts's one handle. Loaded on first use, never
 * at import time.
 */
import koffi from '../koffi.js';
import { errnoName, libcLibrary } from './libc.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- koffi functions are untyped at this edge */
type Fn = (...args: any[]) => any;

export interface Sys {
  /** Maps `length` bytes of `fd` at `offset` read-only (shared); returns the pointer or throws. */
  mmapReadOnly(fd: number, length: number, offset: number): { ptr: unknown; address: number };
  munmap(ptr: unknown, length: number): void;
  /** An AF_PACKET raw socket that receives nothing until bound; returns the fd or throws. */
  packetSocket(): number;
  /** Attaches a BPF socket filter program; throws on failure. */
  attachSocketFilter(fd: number, progFd: number): void;
  /** The socket no longer sees packets leaving (PACKET_IGNORE_OUTGOING, Linux 4.20+): the kernel then skips cloning them for it. */
  ignoreOutgoing(fd: number): void;
  /** Starts receiving every protocol on every interface of this network namespace. */
  bindAllInterfaces(fd: number): void;
  close(fd: number): void;
  ifNameToIndex(name: string): number;
  readonly pageSize: number;
}

const AF_PACKET = 17;
const SOCK_RAW = 3;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const ETH_P_ALL_BE = 0x0300; // htons(3)
const SOL_SOCKET = 1;
const SO_ATTACH_BPF = 50;
const SOL_PACKET = 263;
const PACKET_IGNORE_OUTGOING = 23;
const PROT_READ = 1;
const MAP_SHARED = 1;
const SC_PAGESIZE = 30;

let cached: Sys | undefined;

export function loadSys(): Sys {
  if (cached) return cached;
  const lib = libcLibrary();
  const f = (sig: string): Fn => lib.func(sig) as Fn;
  const mmap = f('void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)');
  const munmap = f('int munmap(void *addr, size_t length)');
  const socket = f('int socket(int domain, int type, int protocol)');
  const setsockopt = f('int setsockopt(int fd, int level, int name, const int *value, uint32_t len)');
  const bind = f('int bind(int fd, const uint8_t *addr, uint32_t len)');
  const close = f('int close(int fd)');
  const ifNameToIndex = f('unsigned int if_nametoindex(const char *name)');
  const sysconf = f('long sysconf(int name)');
  const fail = (what: string): never => {
    throw new Error(`${what} failed: ${errnoName(koffi.errno())}`);
  };
  cached = {
    pageSize: Number(sysconf(SC_PAGESIZE)),
    mmapReadOnly(fd, length, offset) {
      const ptr: unknown = mmap(null, length, PROT_READ, MAP_SHARED, fd, offset);
      const a = ptr === null ? 0n : koffi.address(ptr);
      if (a === 0n || a === 0xffffffffffffffffn) fail('mmap');
      return { ptr, address: Number(a) };
    },
    munmap(ptr, length) {
      if ((munmap(ptr, length) as number) < 0) fail('munmap');
    },
    packetSocket() {
      const fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) as number;
      if (fd < 0) fail('socket(AF_PACKET, SOCK_RAW)');
      return fd;
    },
    attachSocketFilter(fd, progFd) {
      if ((setsockopt(fd, SOL_SOCKET, SO_ATTACH_BPF, [progFd], 4) as number) < 0) fail('setsockopt(SO_ATTACH_BPF)');
    },
    ignoreOutgoing(fd) {
      if ((setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, [1], 4) as number) < 0) fail('setsockopt(PACKET_IGNORE_OUTGOING)');
    },
    bindAllInterfaces(fd) {
      // struct sockaddr_ll { u16 family; be16 protocol; int ifindex (0: all); u16 hatype; u8 pkttype; u8 halen; u8 addr[8]; }
      const sa = Buffer.alloc(20);
      sa.writeUInt16LE(AF_PACKET, 0);
      sa.writeUInt16LE(ETH_P_ALL_BE, 2);
      if ((bind(fd, sa, sa.length) as number) < 0) fail('bind(AF_PACKET)');
    },
    close(fd) {
      close(fd);
    },
    ifNameToIndex: (name) => ifNameToIndex(name) as number,
  };
  return cached;
}
