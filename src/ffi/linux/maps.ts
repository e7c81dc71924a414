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
    keys: (keySize) => mapKeys(map, keySize),
  };
}

/** Every key of a hash map (a snapshot; keys added meanwhile may be missed until the next read). */
export function mapKeys(map: BpfMap, keySize: number): Uint8Array[] {
  const l = loadLibbpf();
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
}

/** A u32 key (array maps). */
export function u32Key(n: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

const BPF_ANY = 0;

/** Writing single entries of a (hash) map from the agent: control-plane updates, never per packet. */
export interface MapWriter {
  /** Inserts or replaces `key`; throws with the map's name on failure (E2BIG: the map is full). */
  put(key: Uint8Array, value: Uint8Array): void;
  /** Deletes `key`; false when it was not there. */
  delete(key: Uint8Array): boolean;
}

export function mapWriter(map: BpfMap): MapWriter {
  const l = loadLibbpf();
  return {
    put(key, value) {
      const rc = l.update(map.fd, key, value, BPF_ANY) as number;
      if (rc < 0) throw new Error(`cannot update map ${map.name}: ${errnoText(lastErrno(rc))}`);
    },
    delete(key) {
      const rc = l.deleteElem(map.fd, key) as number;
      if (rc === 0) return true;
      const errno = lastErrno(rc);
      if (errno === ENOENT) return false;
      throw new Error(`cannot delete from map ${map.name}: ${errnoText(errno)}`);
    },
  };
}

/** Reading single values of a (hash or array) map from the agent: a few per interval, never per packet. */
export interface MapReader {
  /** The value at `key`, in a buffer reused by the next read; undefined when the key is absent. */
  read(key: Uint8Array): Buffer | undefined;
}

export function mapReader(map: BpfMap): MapReader {
  const l = loadLibbpf();
  const value = Buffer.alloc(map.valueSize);
  return {
    read(key) {
      const rc = l.lookup(map.fd, key, value) as number;
      if (rc === 0) return value;
      const errno = lastErrno(rc);
      if (errno === ENOENT) return undefined;
      throw new Error(`cannot read map ${map.name}: ${errnoText(errno)}`);
    },
  };
}
