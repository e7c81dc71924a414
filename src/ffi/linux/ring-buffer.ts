/**
 * Draining a BPF ring buffer into typed records from the event loop.
 *
 * libbpf's ring_buffer owns the consumer position; its epoll fd is watched with koffi.node.poll and
 * each wake-up makes exactly one ring_buffer__consume call, which runs our sample callback once per
 * record. The callback does not decode through koffi (which would allocate per record): the agent
 * maps the same ring read-only itself and the decoder reads each record straight out of one
 * DataView. The callback receives the record's address as a number; the first record's position,
 * found by following libbpf's walk from the consumer position (8-byte headers, 8-byte aligned,
 * discarded records skipped), fixes where libbpf's mapping starts, and after that a record's offset
 * in our view is its address minus that base (both mappings repeat the data area twice, so a
 * record never wraps).
 * The records of one drain are handed on as one batch (or several of at most maxBatch records).
 */
import { koffi, errnoText, lastErrno, libbpfLogTail, loadLibbpf } from './libbpf.js';
import type { BpfMap } from './object.js';
import { perCpuReader, u32Key } from './maps.js';
import { loadSys } from './sys.js';

/** Reads one record: `offset` is where its data starts in `view`, `size` its length. Must not keep `view`. */
export type RecordDecoder<T> = (view: DataView, offset: number, size: number) => T;

export interface RingBufferOptions<T> {
  readonly decode: RecordDecoder<T>;
  /** Called once per drain with the records decoded (never with an empty array). */
  readonly onBatch: (records: T[]) => void;
  /** A decoder (one record) or the batch consumer (`lost` records) threw; the drain goes on. */
  readonly onError?: (err: unknown, lost: number) => void;
  /**
   * ring_buffer__consume failed: the ring cannot be read (the caller fails the plugin, whose
   * restart opens it afresh). Without it, such errors go to onError.
   */
  readonly onConsumeError?: (err: Error) => void;
  /** The object's per-CPU counter of records the kernel could not reserve room for. */
  readonly lostMap?: BpfMap;
  /** Watch the epoll fd from the event loop (default true; false: the caller calls drain()). */
  readonly poll?: boolean;
  /**
   * Hand on a batch as soon as it holds this many records, even mid-drain (default 4096): a drain
   * can deliver hundreds of thousands of records, and records that die young cost the GC little.
   */
  readonly maxBatch?: number;
  /**
   * For programs that batch their wake-ups (see native-linux/include/retina.h): after a wake-up,
   * drain again this many ms later, and again while those drains still find records, so a record
   * the kernel did not wake us for waits at most about this long. An idle ring arms no timer.
   * Unset: drain on wake-ups only.
   */
  readonly followUpMs?: number;
}

export interface RingBufferReader extends Disposable {
  /** One ring_buffer__consume; returns how many records it delivered. */
  drain(): number;
  /** Records the kernel dropped since the previous call (ring full). */
  takeLost(): number;
  readonly stats: { readonly drains: number; readonly records: number; readonly errors: number };
}

const BUSY = 0x80000000;
const DISCARD = 0x40000000;

export function openRingBuffer<T>(map: BpfMap, opts: RingBufferOptions<T>): RingBufferReader {
  const l = loadLibbpf();
  const sys = loadSys();
  const size = map.maxEntries;
  const mask = size - 1;
  const page = sys.pageSize;
  const consumerMap = sys.mmapReadOnly(map.fd, page, 0);
  const dataLen = page + 2 * size;
  let dataMap: { ptr: unknown } | undefined;
  try {
    dataMap = sys.mmapReadOnly(map.fd, dataLen, page);
  } catch (e) {
    sys.munmap(consumerMap.ptr, page);
    throw e;
  }
  const consumer = new DataView(koffi.view(consumerMap.ptr, 8));
  const data = new DataView(koffi.view(dataMap.ptr, dataLen), page);
  const { decode, onBatch } = opts;
  const onError = opts.onError ?? (() => undefined);
  const stats = { drains: 0, records: 0, errors: 0 };
  let batch: T[] = [];
  const maxBatch = opts.maxBatch ?? 4096;
  const flush = (): void => {
    const out = batch;
    batch = [];
    stats.records += out.length;
    try {
      onBatch(out);
    } catch (e) {
      stats.errors++;
      onError(e, out.length);
    }
  };
  let pos = 0;
  /** Where libbpf's mapping of the data area starts: found from the first record, then fixed. */
  let base = -1;
  const walk = (len: number): number => {
    // Follow libbpf's walk: skip discarded records, then this one.
    for (;;) {
      const hdr = data.getUint32(pos & mask, true);
      if ((hdr & DISCARD) === 0 || (hdr & BUSY) !== 0) break;
      pos += ((hdr & ~DISCARD) + 8 + 7) & ~7;
    }
    const off = (pos & mask) + 8;
    pos += (len + 8 + 7) & ~7;
    return off;
  };
  const sample = (_ctx: unknown, addr: number, len: number): number => {
    let off: number;
    if (base >= 0) off = addr - base;
    else {
      off = walk(len);
      base = addr - off;
    }
    try {
      batch.push(decode(data, off, len));
    } catch (e) {
      stats.errors++;
      onError(e, 1);
    }
    if (batch.length >= maxBatch) flush();
    return 0;
  };
  const cb = koffi.register(sample, koffi.pointer(l.sampleProto));
  const rb: unknown = l.rbNew(map.fd, cb, null, null);
  if (!rb) {
    const why = `${errnoText(lastErrno())}${libbpfLogTail(l)}`;
    koffi.unregister(cb);
    sys.munmap(dataMap.ptr, dataLen);
    sys.munmap(consumerMap.ptr, page);
    throw new Error(`cannot open ring buffer ${map.name}: ${why}`);
  }
  const lost = opts.lostMap ? perCpuReader(opts.lostMap) : undefined;
  let lostSeen = 0;
  let closed = false;
  const drain = (): number => {
    if (closed) return 0;
    if (base < 0) pos = consumer.getUint32(0, true) + consumer.getUint32(4, true) * 2 ** 32;
    const n = l.rbConsume(rb) as number;
    stats.drains++;
    if (n < 0) {
      stats.errors++;
      const err = new Error(`ring_buffer__consume(${map.name}): ${errnoText(-n)}`);
      if (opts.onConsumeError) opts.onConsumeError(err);
      else onError(err, 0);
    }
    if (batch.length) flush();
    return Math.max(n, 0);
  };
  // Wake on data only: each epoll wake-up drains, then arms one follow-up drain; a follow-up that
  // found records arms the next. No fixed-rate timer, so an idle ring costs no wake-ups.
  const followUpMs = opts.poll === false ? undefined : opts.followUpMs;
  let followUp: NodeJS.Timeout | undefined;
  const arm = (): void => {
    if (followUpMs === undefined || followUp || closed) return;
    followUp = setTimeout(() => {
      followUp = undefined;
      if (drain() > 0) arm();
    }, followUpMs);
    followUp.unref();
  };
  const poller = opts.poll === false ? undefined : koffi.node.poll(l.rbEpollFd(rb) as number, { readable: true }, () => {
    drain();
    arm();
  });
  return {
    stats,
    drain,
    takeLost() {
      if (!lost) return 0;
      const total = lost.sum(u32Key(0))?.[0] ?? 0;
      const delta = total - lostSeen;
      lostSeen = total;
      return delta;
    },
    [Symbol.dispose]() {
      if (closed) return;
      closed = true;
      clearTimeout(followUp);
      poller?.close();
      l.rbFree(rb);
      koffi.unregister(cb);
      sys.munmap(dataMap.ptr, dataLen);
      sys.munmap(consumerMap.ptr, page);
    },
  };
}
