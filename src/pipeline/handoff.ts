/**
 * The hand-off from the thread that drains a ring to one pipeline worker: a bounded ring of slots in
 * a SharedArrayBuffer, one writer (the main thread) and one reader (the worker). The writer copies
 * raw records into the slot it holds open and publishes the slot whole (one atomic store and one
 * notify per slot, not per record); the reader decodes a published slot and frees it. Nothing
 * waits on the writer's side: when every slot is still unread, `open` says so and the caller
 * counts the records it cannot hand over (workers.ts: lost_events_counter{reason="worker_backlog"}).
 *
 * A slot holds its records in one of two formats, said by its filter word:
 * - filter 0: records copied one by one, [u32 size][bytes, padded to 4], every one the reader's;
 * - RING_FORMAT | n << 16 | mask: a run of a BPF ring buffer copied whole (one memcpy for many records),
 *   each record as the kernel wrote it, [u32 len | busy, discard bits][u32 page offset][bytes, padded
 *   to 8]; discarded ones are skipped, and of the rest the reader takes those whose partition
 *   (`partition` of the source's key, of n) is in `mask`. The same run goes to every worker, each with
 *   its own mask: the draining thread copies bytes instead of records, and each record is still counted
 *   by one worker. The reader adds the records it took from such slots to a shared counter (TAKEN), from
 *   which the writer's side knows how many a worker that died had taken (workers.ts: worker_exit).
 *
 *   SharedArrayBuffer: ctrl Int32[4] (wake sequence, slots read, records taken from filtered slots)
 *                      · state Int32[slots] (0 free, 1 published)
 *                      · slots × slotBytes: [u32 count][u32 source][u32 generation][u32 filter][f64 param]
 *                        [u32 bytes of records][u32 0] then the records
 */

import { partitionOf, type PartitionKey } from '../flow/index.js';

interface AtomicsWaitAsync {
  waitAsync(a: Int32Array, index: number, value: number, timeoutMs: number): { async: false; value: string } | { async: true; value: Promise<string> };
}

const WAKE = 0;
const READ = 1;
const TAKEN = 2;
const CTRL_BYTES = 16;
/** Bytes of a slot before its records. */
export const SLOT_HEADER = 32;

/** A slot's filter word: its records are a BPF ring buffer's run (see above). */
export const RING_FORMAT = 0x80000000;
/** The ring's record header (include/uapi/linux/bpf.h): its length's two top bits, 8 bytes in all. */
export const RINGBUF_BUSY = 0x80000000;
export const RINGBUF_DISCARD = 0x40000000;
export const RINGBUF_HDR = 8;
/** The most workers a filtered slot can name (its mask's bits). */
export const MAX_PARTITIONS = 16;

/** A filtered slot's filter word: records of the partitions in `mask` (bit p: partition p of n). */
export function ringFilter(n: number, mask: number): number {
  if (n < 1 || n > MAX_PARTITIONS) throw new Error(`${n} partitions: 1 to ${MAX_PARTITIONS}`);
  return (RING_FORMAT | (n << 16) | (mask & 0xffff)) >>> 0;
}

/**
 * Walks the ring-format records from `start` to `end` of `v` (committed ones: a busy header ends the
 * walk), skipping discarded ones, and calls `each` with those whose partition is in `mask` (of `n`, by
 * `key`; a record too short for the key, or every record without a key, is partition 0's); returns how
 * many it called `each` with (`each` may be omitted to count them).
 */
export function forEachRingRecord(v: DataView, start: number, end: number, n: number, mask: number, key: PartitionKey | undefined,
  each?: (view: DataView, offset: number, size: number) => void): number {
  const all = mask === (1 << n) - 1;
  let taken = 0;
  for (let p = start; p + RINGBUF_HDR <= end;) {
    const hdr = v.getUint32(p, true);
    if (hdr & RINGBUF_BUSY) break;
    const len = (hdr & ~(RINGBUF_BUSY | RINGBUF_DISCARD)) >>> 0;
    const at = p + RINGBUF_HDR;
    p = at + ((len + 7) & ~7);
    if (hdr & RINGBUF_DISCARD || p > end) continue;
    if (!all) {
      const part = key !== undefined ? partitionOf(v, at, len, key, n) : 0;
      if (!((mask >>> part) & 1)) continue;
    }
    taken++;
    each?.(v, at, len);
  }
  return taken;
}

export interface HandoffShape {
  readonly slots: number;
  readonly slotBytes: number;
}

/** 64 slots of 64 KiB: 4 MiB per worker, about 35 000 packetparser records (120 bytes) in flight. */
export const DEFAULT_HANDOFF: HandoffShape = { slots: 64, slotBytes: 64 * 1024 };

export function createHandoffBuffer(shape: HandoffShape = DEFAULT_HANDOFF): SharedArrayBuffer {
  if (shape.slotBytes % 8 !== 0 || shape.slotBytes < 256) throw new Error(`hand-off slots of ${shape.slotBytes} bytes: a multiple of 8, at least 256`);
  return new SharedArrayBuffer(CTRL_BYTES + 4 * shape.slots + shape.slots * shape.slotBytes);
}

/** Both sides' view of the buffer. */
interface Layout {
  readonly ctrl: Int32Array;
  readonly state: Int32Array;
  readonly view: DataView;
  readonly bytes: Uint8Array;
  readonly dataAt: number;
  readonly slots: number;
  readonly slotBytes: number;
}

function layout(sab: SharedArrayBuffer, shape: HandoffShape): Layout {
  const dataAt = CTRL_BYTES + 4 * shape.slots;
  if (sab.byteLength !== dataAt + shape.slots * shape.slotBytes) throw new Error('hand-off buffer and shape disagree');
  return {
    ctrl: new Int32Array(sab, 0, 4), state: new Int32Array(sab, CTRL_BYTES, shape.slots), view: new DataView(sab), bytes: new Uint8Array(sab),
    dataAt, slots: shape.slots, slotBytes: shape.slotBytes,
  };
}

export class HandoffWriter {
  readonly #l: Layout;
  /** Slots published so far. */
  #written = 0;
  /** The open slot's byte offset, or -1. */
  #at = -1;
  #pos = 0;
  #count = 0;
  #filter = 0;
  /** The reader's TAKEN counter when `takenSince` last read it. */
  #taken = 0;

  constructor(sab: SharedArrayBuffer, shape: HandoffShape = DEFAULT_HANDOFF) {
    this.#l = layout(sab, shape);
  }

  /** The open slot's filter (0: records copied one by one; else ringFilter's word). */
  get filter(): number {
    return this.#filter;
  }

  /** Whether a slot could be opened (after publishing the open one, if any). */
  canOpen(): boolean {
    return Atomics.load(this.#l.state, (this.#written + (this.#at >= 0 ? 1 : 0)) % this.#l.slots) === 0;
  }

  /** Whether `bytes` more bytes fit in the open slot. */
  fitsBytes(bytes: number): boolean {
    return this.#at >= 0 && this.#pos + bytes <= this.#l.slotBytes;
  }

  /** The most bytes of records one slot holds. */
  get room(): number {
    return this.#l.slotBytes - SLOT_HEADER;
  }

  /** Records the reader took from filtered slots since the previous call. */
  takenSince(): number {
    const now = Atomics.load(this.#l.ctrl, TAKEN) >>> 0;
    const d = (now - this.#taken) >>> 0;
    this.#taken = now;
    return d;
  }

  /**
   * Records handed over in filtered slots the reader has not freed, counted as it would take them
   * (`keyOf`: a source's key), and those of the open slot, whatever its format (a reader that is
   * gone: what it held is lost, workers.ts; records of published unfiltered slots its caller counted
   * when they were published).
   */
  unread(keyOf: (source: number) => PartitionKey | undefined): number {
    const read = Atomics.load(this.#l.ctrl, READ) >>> 0;
    let n = 0;
    const count = (at: number): number => {
      const slot = slotAt(this.#l, at);
      return slot.filter === 0 ? slot.count : slot.forEach(undefined, keyOf(slot.source));
    };
    for (let k = read; k < this.#written; k++) {
      const at = this.#l.dataAt + (k % this.#l.slots) * this.#l.slotBytes;
      if (this.#l.view.getUint32(at + 12, true) !== 0) n += count(at);
    }
    if (this.#at >= 0) {
      this.#seal();
      n += count(this.#at);
    }
    return n;
  }

  /** Slots published and not yet read. */
  backlog(): number {
    return this.#written - Atomics.load(this.#l.ctrl, READ) + (this.#at >= 0 ? 1 : 0);
  }

  get isOpen(): boolean {
    return this.#at >= 0;
  }

  /** Records in the open slot. */
  get pending(): number {
    return this.#count;
  }

  /** Whether a record of `size` bytes fits in the open slot. */
  fits(size: number): boolean {
    return this.#at >= 0 && this.#pos + 4 + ((size + 3) & ~3) <= this.#l.slotBytes;
  }

  /**
   * Opens the next slot for `source`'s records (decoded with `param`, counted under the spec of
   * `generation`: the reader waits for that spec first); false when none is free.
   */
  open(source: number, param: number, generation = 0, filter = 0): boolean {
    if (this.#at >= 0) throw new Error('a hand-off slot is already open');
    const slot = this.#written % this.#l.slots;
    if (Atomics.load(this.#l.state, slot) !== 0) return false;
    this.#at = this.#l.dataAt + slot * this.#l.slotBytes;
    this.#l.view.setUint32(this.#at + 4, source, true);
    this.#l.view.setUint32(this.#at + 8, generation, true);
    this.#l.view.setUint32(this.#at + 12, filter, true);
    this.#l.view.setFloat64(this.#at + 16, param, true);
    this.#pos = SLOT_HEADER;
    this.#count = 0;
    this.#filter = filter;
    return true;
  }

  /**
   * Copies one record into the open slot (the caller checked `fits`), word by word through the two
   * DataViews: a record is about 120 bytes, and a Uint8Array view made per record to `set` it cost
   * more than the copy (bench/pipeline/README.md).
   */
  write(src: DataView, offset: number, size: number): void {
    const v = this.#l.view;
    let p = this.#at + this.#pos;
    v.setUint32(p, size, true);
    p += 4;
    const words = size & ~3;
    let i = 0;
    for (; i < words; i += 4) v.setUint32(p + i, src.getUint32(offset + i, true), true);
    for (; i < size; i++) v.setUint8(p + i, src.getUint8(offset + i));
    this.#pos += 4 + ((size + 3) & ~3);
    this.#count++;
  }

  /**
   * Copies a run of ring-format records (`records` of them, `length` bytes from `start` of `src`, each
   * with its 8-byte header) into the open filtered slot, one memcpy (the caller checked `fitsBytes`).
   */
  writeRun(src: Uint8Array, start: number, length: number, records: number): void {
    this.#l.bytes.set(src.subarray(start, start + length), this.#at + this.#pos);
    this.#pos += length;
    this.#count += records;
  }

  /** The open slot's header words that publishing writes. */
  #seal(): void {
    this.#l.view.setUint32(this.#at, this.#count, true);
    this.#l.view.setUint32(this.#at + 24, this.#pos - SLOT_HEADER, true);
  }

  /** Publishes the open slot (nothing when none is open). */
  publish(): void {
    if (this.#at < 0) return;
    this.#seal();
    const slot = this.#written % this.#l.slots;
    this.#at = -1;
    this.#written++;
    Atomics.store(this.#l.state, slot, 1);
    Atomics.add(this.#l.ctrl, WAKE, 1);
    Atomics.notify(this.#l.ctrl, WAKE);
  }
}

/** One published slot as the reader sees it. */
export interface SlotRecords {
  readonly source: number;
  readonly generation: number;
  readonly param: number;
  /** 0: records copied one by one, every one the reader's; else a ring run's filter (ringFilter). */
  readonly filter: number;
  /** Records in the slot (of a filtered slot: of every partition). */
  readonly count: number;
  /**
   * Calls `each` with every record of the slot that is the reader's (a filtered slot's by `key`, the
   * source's partition key), its offset and size in `view`; returns how many.
   */
  forEach(each: ((view: DataView, offset: number, size: number) => void) | undefined, key?: PartitionKey): number;
}

function slotAt(l: Layout, at: number): SlotRecords {
  const v = l.view;
  const count = v.getUint32(at, true);
  const filter = v.getUint32(at + 12, true);
  return {
    source: v.getUint32(at + 4, true),
    generation: v.getUint32(at + 8, true),
    param: v.getFloat64(at + 16, true),
    filter,
    count,
    forEach(each, key) {
      if (filter !== 0) {
        const start = at + SLOT_HEADER;
        return forEachRingRecord(v, start, start + v.getUint32(at + 24, true), (filter >>> 16) & 0xff, filter & 0xffff, key, each);
      }
      let p = at + SLOT_HEADER;
      for (let i = 0; i < count; i++) {
        const size = v.getUint32(p, true);
        each?.(v, p + 4, size);
        p += 4 + ((size + 3) & ~3);
      }
      return count;
    },
  };
}

export class HandoffReader {
  readonly #l: Layout;
  #read = 0;

  constructor(sab: SharedArrayBuffer, shape: HandoffShape = DEFAULT_HANDOFF) {
    this.#l = layout(sab, shape);
  }

  /** The next published slot, or undefined; `release()` frees it. */
  peek(): SlotRecords | undefined {
    const slot = this.#read % this.#l.slots;
    if (Atomics.load(this.#l.state, slot) !== 1) return undefined;
    return slotAt(this.#l, this.#l.dataAt + slot * this.#l.slotBytes);
  }

  /** Frees the slot `peek` returned; `taken`: the records taken from it when filtered (the writer's side counts them, TAKEN). */
  release(taken = 0): void {
    const slot = this.#read % this.#l.slots;
    this.#read++;
    if (taken) Atomics.add(this.#l.ctrl, TAKEN, taken);
    Atomics.store(this.#l.state, slot, 0);
    Atomics.add(this.#l.ctrl, READ, 1);
  }

  /** Ends a pending `wait` at once (the reader's own thread: a stop request). */
  interrupt(): void {
    Atomics.add(this.#l.ctrl, WAKE, 1);
    Atomics.notify(this.#l.ctrl, WAKE);
  }

  /** Resolves when the writer publishes again (or after `timeoutMs`); call when `peek` found nothing. */
  async wait(timeoutMs: number): Promise<void> {
    const seq = Atomics.load(this.#l.ctrl, WAKE);
    if (this.peek() !== undefined) return;
    // Atomics.waitAsync (ES2024; Node 16+) is not in this project's TypeScript lib.
    const w = (Atomics as unknown as AtomicsWaitAsync).waitAsync(this.#l.ctrl, WAKE, seq, timeoutMs);
    if (w.async) await w.value;
  }
}
