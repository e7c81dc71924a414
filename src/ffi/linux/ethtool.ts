/**
 * Ethtool NIC statistics (what `ethtool -S <if>` shows) through the SIOCETHTOOL ioctl on one
 * AF_INET datagram socket: ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS (ETH_SS_STATS) for
 * the names (cached per interface while the count holds), ETHTOOL_GSTATS for the values.
 * Reads never throw: a failure comes back as a value with the errno, for the caller to count.
 */
import { endianness } from 'node:os';
import { AF_INET, SOCK_CLOEXEC, SOCK_DGRAM, errnoName, errnos, loadLibc, type Libc, type NativeBuffer } from './libc.js';

/** Native byte order (the kernel structs are host-endian). */
const LE = endianness() === 'LE';
const SIOCETHTOOL = 0x8946;
const ETHTOOL_GSTRINGS = 0x1b;
const ETHTOOL_GSTATS = 0x1d;
const ETHTOOL_GSSET_INFO = 0x37;
const ETH_SS_STATS = 1;
const ETH_GSTRING_LEN = 32;
const IFNAMSIZ = 16;
/** struct ifreq: 16-byte name + a union of at most 24 bytes (ifmap) on 64-bit, 16 on 32-bit. */
const IFREQ_SIZE = 40;
/**
 * The kernel writes as many strings/values as the driver reports *now*, not as many as we asked
 * for, so a count that grows between two calls would overrun an exact buffer: keep slack, and
 * treat a reply larger than the buffer as a change to retry later.
 */
const SLACK_ENTRIES = 64;

export type EthtoolStats =
  | { readonly ok: true; readonly stats: readonly (readonly [string, number])[] }
  | { readonly ok: false; readonly errno: number; readonly code: string; readonly op: string };

export interface EthtoolClient extends Disposable {
  /** The driver's statistics of `ifname`, in driver order (names may repeat). */
  stats(ifname: string): EthtoolStats;
  /** Drops the cached names of an interface that went away. */
  forget(ifname: string): void;
}

/** Opens the socket; throws when libc or the socket is unavailable (call from start). */
export function openEthtool(libc: Libc = loadLibc()): EthtoolClient {
  const fd = libc.socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw new Error(`socket(AF_INET, SOCK_DGRAM) failed: ${errnoName(-fd)}`);
  return new Client(libc, fd);
}

class Client implements EthtoolClient {
  readonly #libc: Libc;
  #fd: number;
  readonly #ifreq: NativeBuffer;
  #data: NativeBuffer;
  readonly #names = new Map<string, readonly string[]>();

  constructor(libc: Libc, fd: number) {
    this.#libc = libc;
    this.#fd = fd;
    this.#ifreq = libc.alloc(IFREQ_SIZE);
    this.#data = libc.alloc(4096);
  }

  stats(ifname: string): EthtoolStats {
    if (this.#fd < 0) return fail('stats', errnos.EINVAL);
    const nameBytes = Buffer.from(ifname, 'utf8');
    if (nameBytes.length === 0 || nameBytes.length >= IFNAMSIZ) return fail('ifname', errnos.EINVAL);
    const count = this.#count(ifname, nameBytes);
    if (typeof count !== 'number') return count;
    let names = this.#names.get(ifname);
    if (names?.length !== count) {
      const fetched = this.#strings(nameBytes, count);
      if (!Array.isArray(fetched)) return fetched;
      names = fetched;
      this.#names.set(ifname, names);
    }
    return this.#values(nameBytes, names, ifname);
  }

  forget(ifname: string): void {
    this.#names.delete(ifname);
  }

  [Symbol.dispose](): void {
    if (this.#fd >= 0) this.#libc.close(this.#fd);
    this.#fd = -1;
    this.#names.clear();
    this.#ifreq.free();
    this.#data.free();
  }

  /** ETHTOOL_GSSET_INFO: struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[]; } */
  #count(ifname: string, nameBytes: Buffer): number | EthtoolStats {
    const v = this.#buffer(20).view;
    v.setUint32(0, ETHTOOL_GSSET_INFO, LE);
    v.setUint32(4, 0, LE);
    v.setBigUint64(8, 1n << BigInt(ETH_SS_STATS), LE);
    v.setUint32(16, 0, LE);
    const rc = this.#ioctl(nameBytes);
    if (rc < 0) return fail('GSSET_INFO', -rc);
    // The driver has no ETH_SS_STATS set: the same answer GSTATS would give.
    if ((v.getBigUint64(8, LE) & (1n << BigInt(ETH_SS_STATS))) === 0n) {
      this.#names.delete(ifname);
      return fail('GSSET_INFO', errnos.EOPNOTSUPP);
    }
    return v.getUint32(16, LE);
  }

  /** ETHTOOL_GSTRINGS: struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[len * 32]; } */
  #strings(nameBytes: Buffer, count: number): string[] | EthtoolStats {
    const v = this.#buffer(12 + (count + SLACK_ENTRIES) * ETH_GSTRING_LEN).view;
    v.setUint32(0, ETHTOOL_GSTRINGS, LE);
    v.setUint32(4, ETH_SS_STATS, LE);
    v.setUint32(8, count, LE);
    const rc = this.#ioctl(nameBytes);
    if (rc < 0) return fail('GSTRINGS', -rc);
    const len = v.getUint32(8, LE);
    if (len !== count) return fail('GSTRINGS', errnos.EINVAL); // the set changed under us; next tick retries
    const bytes = new Uint8Array(v.buffer, v.byteOffset + 12, len * ETH_GSTRING_LEN);
    const out: string[] = [];
    for (let i = 0; i < len; i++) {
      const s = bytes.subarray(i * ETH_GSTRING_LEN, (i + 1) * ETH_GSTRING_LEN);
      const end = s.indexOf(0);
      out.push(Buffer.from(s.subarray(0, end < 0 ? ETH_GSTRING_LEN : end)).toString('utf8'));
    }
    return out;
  }

  /** ETHTOOL_GSTATS: struct ethtool_stats { u32 cmd; u32 n_stats; u64 data[n_stats]; } */
  #values(nameBytes: Buffer, names: readonly string[], ifname: string): EthtoolStats {
    const v = this.#buffer(8 + (names.length + SLACK_ENTRIES) * 8).view;
    v.setUint32(0, ETHTOOL_GSTATS, LE);
    v.setUint32(4, names.length, LE);
    const rc = this.#ioctl(nameBytes);
    if (rc < 0) return fail('GSTATS', -rc);
    const n = v.getUint32(4, LE);
    if (n !== names.length) {
      this.#names.delete(ifname);
      return fail('GSTATS', errnos.EINVAL);
    }
    const stats: (readonly [string, number])[] = [];
    for (let i = 0; i < n; i++) stats.push([names[i] as string, Number(v.getBigUint64(8 + i * 8, LE))]);
    return { ok: true, stats };
  }

  /** The shared data buffer, grown to at least `size` bytes and zeroed. */
  #buffer(size: number): NativeBuffer {
    if (this.#data.size < size) {
      this.#data.free();
      this.#data = this.#libc.alloc(Math.max(size, this.#data.size * 2));
    }
    new Uint8Array(this.#data.view.buffer, this.#data.view.byteOffset, size).fill(0);
    return this.#data;
  }

  /** SIOCETHTOOL with ifr_name = the interface and ifr_data = the data buffer. */
  #ioctl(nameBytes: Buffer): number {
    const req = new Uint8Array(this.#ifreq.view.buffer, this.#ifreq.view.byteOffset, IFREQ_SIZE);
    req.fill(0);
    req.set(nameBytes, 0);
    if (this.#libc.pointerSize === 8) this.#ifreq.view.setBigUint64(IFNAMSIZ, this.#data.address, LE);
    else this.#ifreq.view.setUint32(IFNAMSIZ, Number(this.#data.address), LE);
    return this.#libc.ioctlPtr(this.#fd, SIOCETHTOOL, this.#ifreq);
  }
}

function fail(op: string, errno: number): EthtoolStats {
  return { ok: false, errno, code: errnoName(errno), op };
}
