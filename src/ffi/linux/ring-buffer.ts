/**
 * Draining a BPF ring buffer into typed records from the event loop.
 *
 * libbpf's ring_buffer owns the consumer position; its epoll fd is watched with koffi.node.poll and
 * each wake-up makes exactly one ring_buffer__consume call, which runs our sample callback once per
 * record. The callback does not decode through koffi (which would allocate per record): the decoder
 * reads each record straight out of one DataView over libbpf's own mapping of the data area (which
 * repeats the data area twice, so a record never wraps), and a record's offset in it is its address
 * minus where that mapping's data area starts. libbpf does not tell where it mapped the ring, so the
 * reader finds the one mapping of the map's fd that ring_buffer__new added to /proc/self/maps (offset
 * one page, length one page plus twice the ring's size). No second mapping of the data area: each
 * mapping of a ring counts twice its size in RSS (the kernel maps every page at mmap time).
 * The records of one drain are handed on as one batch (or several of at most maxBatch records).
 */
import { readFileSync } from 'node:fs';
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

/** A DataView of `length` bytes at a raw address (memory that someone else mapped and keeps). */
function viewAt(address: number, length: number): DataView {
  const ptr: unknown = koffi.decode(new BigUint64Array([BigInt(address)]).buffer, 'void *');
  return new DataView(koffi.view(ptr, length));
}

/** Start addresses of this process's mappings of BPF maps at file offset `offset` and `length` bytes long. */
function bpfMapMappings(offset: number, length: number): Set<number> {
  const found = new Set<number>();
  for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
    if (!line.endsWith('bpf-map')) continue;
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) /.exec(line);
    if (!m) continue;
    const start = parseInt(m[1] as string, 16);
    if (parseInt(m[2] as string, 16) - start === length && parseInt(m[3] as string, 16) === offset) found.add(start);
  }
  return found;
}

export function openRingBuffer<T>(map: BpfMap, opts: RingBufferOptions<T>): RingBufferReader {
  const l = loadLibbpf();
  const sys = loadSys();
  const size = map.maxEntries;
  const page = sys.pageSize;
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
  let base = 0;
  let data: DataView = new DataView(new ArrayBuffer(0));
  const sample = (_ctx: unknown, addr: number, len: number): number => {
    const off = addr - base;
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
  const ringLen = page + 2 * size;
  const earlier = bpfMapMappings(page, ringLen);
  const rb: unknown = l.rbNew(map.fd, cb, null, null);
  if (!rb) {
    const why = `${errnoText(lastErrno())}${libbpfLogTail(l)}`;
    koffi.unregister(cb);
    throw new Error(`cannot open ring buffer ${map.name}: ${why}`);
  }
  const added = [...bpfMapMappings(page, ringLen)].filter((a) => !earlier.has(a));
  if (added.length !== 1) {
    l.rbFree(rb);
    koffi.unregister(cb);
    throw new Error(`cannot open ring buffer ${map.name}: ${added.length} new mappings of ${ringLen} bytes at offset ${page} in /proc/self/maps, expected libbpf's one`);
  }
  base = (added[0] as number) + page;
  data = viewAt(base, 2 * size);
  const lost = opts.lostMap ? perCpuReader(opts.lostMap) : undefined;
  let lostSeen = 0;
  let closed = false;
  const drain = (): number => {
    if (closed) return 0;
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
    },
  };
}
