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
 * Drains from the event loop are bounded (maxPerDrain records): the callback stops libbpf's loop by
 * returning a negative value (libbpf has already moved the consumer past that record, which we keep),
 * and the rest is drained by a setImmediate, after the I/O that came meanwhile (a scrape, a watch
 * event): a backlog of 100 000 records no longer holds the event loop for its whole drain.
 * (ring_buffer__consume_n does this in libbpf 1.4; Debian 12 ships 1.1.)
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
  /**
   * Most records one event-loop drain takes before it lets other callbacks run (default 4096, one
   * batch); the rest follows at once from a setImmediate. `drain()` called by hand is not bounded.
   */
  readonly maxPerDrain?: number;
}

export interface RingBufferReader extends Disposable {
  /** One ring_buffer__consume to the end of the ring; returns how many records it delivered. */
  drain(): number;
  /**
   * Drains from the event loop as a wake-up does: a bounded slice now, the rest in slices chained
   * by setImmediate, a follow-up armed when records came. For records written without a wake-up
   * (a sweep's) while producers may keep the ring from ever emptying: drain() would not return.
   */
  drainSoon(): void;
  /** Records the kernel dropped since the previous call (ring full). */
  takeLost(): number;
  readonly stats: { readonly drains: number; readonly records: number; readonly errors: number; readonly slicesCut: number };
}

/** What the sample callback returns to stop libbpf's loop (any negative value; it is returned by ring_buffer__consume). */
const STOP = -125; // -ECANCELED

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
  const stats = { drains: 0, records: 0, errors: 0, slicesCut: 0 };
  const maxPerDrain = opts.maxPerDrain ?? 4096;
  /** Records the current consume may still take, and whether the callback stopped it. */
  let budget = Infinity;
  let cut = false;
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
    if (--budget <= 0) {
      cut = true;
      return STOP;
    }
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
  /** One ring_buffer__consume of at most `limit` records (`cut` says whether it stopped there). */
  const consume = (limit: number): number => {
    cut = false;
    if (closed) return 0;
    budget = limit;
    const n = l.rbConsume(rb) as number;
    const taken = limit - budget;
    budget = Infinity;
    stats.drains++;
    if (cut) {
      stats.slicesCut++;
      if (batch.length) flush();
      return taken;
    }
    if (n < 0) {
      stats.errors++;
      const err = new Error(`ring_buffer__consume(${map.name}): ${errnoText(-n)}`);
      if (opts.onConsumeError) opts.onConsumeError(err);
      else onError(err, 0);
    }
    if (batch.length) flush();
    return Math.max(n, 0);
  };
  const drain = (): number => consume(Infinity);
  // Wake on data only: each epoll wake-up drains, then arms one follow-up drain; a follow-up that
  // found records arms the next. No fixed-rate timer, so an idle ring costs no wake-ups. A wake-up
  // moves a pending follow-up to followUpMs after itself: the kernel holds off its wake-ups for the
  // hold-off after the LAST one it gave, so a record it held back after a second wake-up would
  // otherwise outlive a follow-up armed by the first, and wait for the next record to wake us (seen
  // under TCG: the last DNS query and its answer of a test, never delivered).
  const followUpMs = opts.poll === false ? undefined : opts.followUpMs;
  let followUp: NodeJS.Timeout | undefined;
  const arm = (afterWake: boolean): void => {
    if (followUpMs === undefined || closed) return;
    if (followUp) {
      if (!afterWake) return;
      clearTimeout(followUp);
    }
    followUp = setTimeout(() => {
      followUp = undefined;
      run(false);
    }, followUpMs);
    followUp.unref();
  };
  // A drain from the event loop: bounded slices, chained by setImmediate while a slice was cut; at
  // its end a follow-up is armed after a wake-up, or after a follow-up that found records.
  let more: NodeJS.Immediate | undefined;
  let found = 0;
  let woken = false;
  const step = (): void => {
    more = undefined;
    found += consume(maxPerDrain);
    if (closed) return;
    if (cut) {
      more = setImmediate(step);
      return;
    }
    if (woken || found > 0) arm(woken);
  };
  const run = (wake: boolean): void => {
    if (more) return; // a chain is under way: it drains to the end
    woken = wake;
    found = 0;
    step();
  };
  const poller = opts.poll === false ? undefined : koffi.node.poll(l.rbEpollFd(rb) as number, { readable: true }, () => run(true));
  return {
    stats,
    drain,
    drainSoon: () => run(false),
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
      clearImmediate(more);
      poller?.close();
      l.rbFree(rb);
      koffi.unregister(cb);
    },
  };
}
