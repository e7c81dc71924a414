/**
 * Draining a BPF ring buffer into typed records from the event loop.
 *
 * libbpf's ring_buffer maps the ring (and gives the epoll fd, watched with koffi.node.poll); the records
 * are walked here, in JavaScript, over those mappings: the producer's position (its page), each
 * record's 8-byte header (length, busy and discard bits) and data in libbpf's mapping of the data area
 * (which repeats the data area twice, so a record never wraps), and our position written back to the
 * consumer page, as ring_buffer__consume does in C, with atomics for the orderings it has. That is no
 * call out of JavaScript per record: libbpf's way, a callback into JavaScript for each record (still
 * here as `consumer: 'libbpf'`, to measure against), cost about 190 ns a record, most of the drain
 * (bench/ebpf/ring-drain.bench.ts prints both). The decoder reads each record straight out of one
 * DataView over the data area (no allocation through koffi per record). libbpf does not tell where it
 * mapped the ring, so the reader finds the mappings of the map's fd that ring_buffer__new added to
 * /proc/self/maps (the data: offset one page, length one page plus twice the ring's size, the
 * producer's page first; the consumer page: offset 0, one page). No second mapping of the data area:
 * each mapping of a ring counts twice its size in RSS (the kernel maps every page at mmap time).
 * The records of one drain are handed on as one batch (or several of at most maxBatch records).
 * Drains from the event loop are bounded (maxPerDrain records: the walk stops there; with libbpf's
 * consumer the callback stops its loop by returning a negative value, libbpf having already moved the
 * consumer past that record, which we keep), and the rest is drained by a setImmediate, after the I/O
 * that came meanwhile (a scrape, a watch event): a backlog of 100 000 records no longer holds the event
 * loop for its whole drain. (ring_buffer__consume_n does this in libbpf 1.4; Debian 12 ships 1.1.)
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
  /**
   * Who walks the records: 'js' (default) reads them in place from the mapping and moves the consumer
   * position itself, with no call out of JavaScript per record; 'libbpf' has ring_buffer__consume run
   * a callback into JavaScript for each (about 190 ns a record: kept to measure against).
   */
  readonly consumer?: 'js' | 'libbpf';
  /**
   * Called before the JavaScript walk gives the space of records it handed to `decode` back to the
   * kernel (before each store of its position): a decoder that keeps referring to records in the
   * ring (a sink copying runs of them, RawRecordSink.pushRing) copies them then; also when the reader
   * is closed, before the ring is unmapped. libbpf's walk gives each record's space back as its
   * callback returns and never calls it.
   */
  readonly beforeRelease?: () => void;
}

export interface RingBufferReader extends Disposable {
  /** One walk to the end of the ring; returns how many records it delivered. */
  drain(): number;
  /**
   * Drains from the event loop as a wake-up does: a bounded slice now, the rest in slices chained
   * by setImmediate, a follow-up armed when records came. For records written without a wake-up
   * (a sweep's) while producers may keep the ring from ever emptying: drain() would not return.
   */
  drainSoon(): void;
  /** Records the kernel dropped since the previous call (ring full). */
  takeLost(): number;
  /** Who walks the records (RingBufferOptions.consumer; 'libbpf' also when libbpf's consumer page was not found). */
  readonly consumer: 'js' | 'libbpf';
  readonly stats: { readonly drains: number; readonly records: number; readonly errors: number; readonly slicesCut: number };
}

/** What the sample callback returns to stop libbpf's loop (any negative value; it is returned by ring_buffer__consume). */
const STOP = -125; // -ECANCELED

/** `length` bytes at a raw address (memory that someone else mapped and keeps) as an ArrayBuffer. */
function bufferAt(address: number, length: number): ArrayBuffer {
  const ptr: unknown = koffi.decode(new BigUint64Array([BigInt(address)]).buffer, 'void *');
  return koffi.view(ptr, length);
}

/** The ring's record header: its length's two top bits (include/uapi/linux/bpf.h). */
const RINGBUF_BUSY = 0x80000000;
const RINGBUF_DISCARD = 0x40000000;
const RINGBUF_HDR = 8;
/** The JavaScript consumer publishes its position at least every this many records (libbpf: every record). */
const PUBLISH_EVERY = 64;

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
    if (closed) return STOP; // closed by a handler: stop libbpf's loop
    walkRecords++;
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
  const earlierConsumer = bpfMapMappings(0, page);
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
  const area = bufferAt(base, 2 * size);
  data = new DataView(area);
  // The JavaScript consumer: the producer page (libbpf's read-only mapping starts with it), the consumer
  // page (libbpf's read-write mapping at offset 0, one page) and the headers' words in the data area.
  // Without the consumer page found (another libbpf's layout), libbpf walks the records: slower, as right.
  const consumerPages = [...bpfMapMappings(0, page)].filter((a) => !earlierConsumer.has(a));
  const js = (opts.consumer ?? 'js') === 'js' && consumerPages.length === 1;
  const producerLo = new Uint32Array(bufferAt(added[0] as number, 8));
  const consumerPos = js ? new BigUint64Array(bufferAt(consumerPages[0] as number, 8)) : new BigUint64Array(1);
  const headers = new Uint32Array(area);
  const mask = size - 1;
  // Our position, in two 32-bit halves (a Number loses precision past 2^53 bytes); only its low half
  // locates a record, and producer minus consumer never exceeds the ring's size.
  const start = Atomics.load(consumerPos, 0);
  let consLo = Number(start & 0xffffffffn);
  let consHi = Number(start >> 32n);
  const beforeRelease = opts.beforeRelease;
  const releasing = (): void => {
    if (!beforeRelease) return;
    try {
      beforeRelease();
    } catch (e) {
      stats.errors++;
      onError(e, 0);
    }
  };
  const publish = (): void => {
    releasing();
    Atomics.store(consumerPos, 0, (BigInt(consHi) << 32n) | BigInt(consLo));
  };
  const lost = opts.lostMap ? perCpuReader(opts.lostMap) : undefined;
  let lostSeen = 0;
  let closed = false;
  // A batch or error handler may close the reader in the middle of a walk: the ring is then unmapped
  // (ring_buffer__free) only once the walk has returned, never under it (libbpf's own loop would write
  // its consumer position to the unmapped page).
  let walking = false;
  let freeAfterWalk = false;
  /** Records libbpf's walk handed to `sample` (what it returns when a handler closed the reader). */
  let walkRecords = 0;
  const free = (): void => {
    l.rbFree(rb);
    koffi.unregister(cb);
  };
  const walked = (): void => {
    walking = false;
    if (freeAfterWalk) {
      freeAfterWalk = false;
      free();
    }
  };
  /**
   * One walk of at most `limit` records in JavaScript, as ring_buffer__consume walks them: up to the
   * producer's position (read again once reached: records committed meanwhile are taken), stopping at
   * a record still being written (busy), skipping discarded ones. The position is published every
   * PUBLISH_EVERY records and at the end, after the records were decoded; then the producer's is read
   * once more (seq-cst atomics), so a record committed before our last store is not left waiting for a
   * wake-up the kernel would not send. `cut` says whether it stopped at `limit`.
   */
  const consumeJs = (limit: number): number => {
    cut = false;
    if (closed) return 0;
    walking = true;
    try {
      return walkJs(limit);
    } finally {
      walked();
    }
  };
  const walkJs = (limit: number): number => {
    stats.drains++;
    let taken = 0;
    let unpublished = 0;
    let prodLo = Atomics.load(producerLo, 0);
    for (;;) {
      if (closed) return taken; // closed by a handler below: read no more (the ring is freed when the walk returns)
      if (consLo === prodLo) {
        if (unpublished) {
          publish();
          unpublished = 0;
        }
        prodLo = Atomics.load(producerLo, 0);
        if (consLo === prodLo) break;
      }
      const off = (consLo & mask) >>> 0;
      const hdr = Atomics.load(headers, off >>> 2);
      if (hdr & RINGBUF_BUSY) break; // reserved, not yet committed
      const len = hdr & ~(RINGBUF_BUSY | RINGBUF_DISCARD);
      const next = consLo + ((len + RINGBUF_HDR + 7) & ~7);
      if (!(hdr & RINGBUF_DISCARD)) {
        try {
          batch.push(decode(data, off + RINGBUF_HDR, len));
        } catch (e) {
          stats.errors++;
          onError(e, 1);
        }
        if (batch.length >= maxBatch) flush();
        taken++;
      }
      if (next >= 0x1_0000_0000) consHi++;
      consLo = next % 0x1_0000_0000;
      if (++unpublished >= PUBLISH_EVERY) {
        publish();
        unpublished = 0;
      }
      if (taken >= limit) {
        cut = true;
        break;
      }
    }
    if (unpublished) publish();
    if (cut) stats.slicesCut++;
    if (batch.length) flush();
    return taken;
  };
  /** One ring_buffer__consume of at most `limit` records (`cut` says whether it stopped there). */
  const consumeLibbpf = (limit: number): number => {
    cut = false;
    if (closed) return 0;
    budget = limit;
    walking = true;
    walkRecords = 0;
    let n: number;
    try {
      n = l.rbConsume(rb) as number;
    } finally {
      walked();
    }
    if (closed) {
      // stopped by the close (its -ECANCELED is ours, no error): what was taken before it
      budget = Infinity;
      if (batch.length) flush();
      return walkRecords;
    }
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
  const consume = js ? consumeJs : consumeLibbpf;
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
    consumer: js ? 'js' : 'libbpf',
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
      if (js) releasing(); // what a decoder still refers to in the ring is copied while it is mapped
      if (walking) freeAfterWalk = true;
      else free();
    },
  };
}
