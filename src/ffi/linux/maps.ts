/**
 * Reading BPF maps from the agent: per-CPU values summed over CPUs, and hash keys. One lookup per
 * key per read (a few per interval), never per packet.
 */
import { errnoText, lastErrno, loadLibbpf } from './libbpf.js';
import type { BpfMap } from './object.js';

const ENOENT = 2;

export interface PerCpuReader {
  /** Sums each u64 field of the value at `key` over all CPUs; undefined when the key is absent. */
  sum(key: Uint8Array): number[] | undefined;
  /** Every key of a hash map (a snapshot; keys added meanwhile may be missed until the next read). */
  keys(keySize: number): Uint8Array[];
}

export function perCpuReader(map: BpfMap): PerCpuReader {
  const l = loadLibbpf();
  const ncpus = l.numCpus() as number;
  if (ncpus <= 0) throw new Error(`cannot count possible CPUs: ${errnoText(lastErrno(ncpus))}`);
  const stride = Math.ceil(map.valueSize / 8) * 8;
  const fields = Math.floor(map.valueSize / 8);
  const value = Buffer.alloc(stride * ncpus);
  return {
    sum(key) {
      const rc = l.lookup(map.fd, key, value) as number;
      if (rc < 0) {
        const errno = lastErrno(rc);
        if (errno === ENOENT) return undefined;
        throw new Error(`cannot read map ${map.name}: ${errnoText(errno)}`);
      }
      const out = new Array<number>(fields).fill(0);
      for (let c = 0; c < ncpus; c++) {
        for (let f = 0; f < fields; f++) out[f] = (out[f] as number) + Number(value.readBigUInt64LE(c * stride + f * 8));
      }
      return out;
    },
    keys(keySize) {
      const out: Uint8Array[] = [];
      let prev: Uint8Array | null = null;
      for (let i = 0; i <= map.maxEntries; i++) {
        const next = Buffer.alloc(keySize);
        const rc = l.nextKey(map.fd, prev, next) as number;
        if (rc < 0) {
          const errno = lastErrno(rc);
          if (errno === ENOENT) break;
          throw new Error(`cannot list keys of map ${map.name}: ${errnoText(errno)}`);
        }
        out.push(next);
        prev = next;
      }
      return out;
    },
  };
}

/** A u32 key (array maps). */
export function u32Key(n: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}
