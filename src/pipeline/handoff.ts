/**
 * The hand-off from the thread that drains a ring to one pipeline worker: a bounded ring of slots in
 * a SharedArrayBuffer, one writer (the main thread) and one reader (the worker). The writer copies
 * raw records into the slot it holds open and publishes the slot whole (one atomic store and one
 * notify per slot, not per record); the reader decodes a published slot and frees it. Nothing
 * waits on the writer's side: when every slot is still unread, `open` says so and the caller
 * counts the records it cannot hand over (workers.ts: lost_events_counter{reason="worker_backlog"}).
 *
 *   SharedArrayBuffer: ctrl Int32[4] (wake sequence, slots read) · state Int32[slots] (0 free, 1 published)
 *                      · slots × slotBytes: [u32 count][u32 source][u32 generation][u32 0][f64 param]
 *                        then records [u32 size][bytes, padded to 4]
 */

interface AtomicsWaitAsync {
  waitAsync(a: Int32Array, index: number, value: number, timeoutMs: number): { async: false; value: string } | { async: true; value: Promise<string> };
}

const WAKE = 0;
const READ = 1;
const CTRL_BYTES = 16;
/** Bytes of a slot before its records. */
export const SLOT_HEADER = 24;

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
  readonly dataAt: number;
  readonly slots: number;
  readonly slotBytes: number;
}

function layout(sab: SharedArrayBuffer, shape: HandoffShape): Layout {
  const dataAt = CTRL_BYTES + 4 * shape.slots;
  if (sab.byteLength !== dataAt + shape.slots * shape.slotBytes) throw new Error('hand-off buffer and shape disagree');
  return {
    ctrl: new Int32Array(sab, 0, 4), state: new Int32Array(sab, CTRL_BYTES, shape.slots), view: new DataView(sab),
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

  constructor(sab: SharedArrayBuffer, shape: HandoffShape = DEFAULT_HANDOFF) {
    this.#l = layout(sab, shape);
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
  open(source: number, param: number, generation = 0): boolean {
    if (this.#at >= 0) throw new Error('a hand-off slot is already open');
    const slot = this.#written % this.#l.slots;
    if (Atomics.load(this.#l.state, slot) !== 0) return false;
    this.#at = this.#l.dataAt + slot * this.#l.slotBytes;
    this.#l.view.setUint32(this.#at + 4, source, true);
    this.#l.view.setUint32(this.#at + 8, generation, true);
    this.#l.view.setFloat64(this.#at + 16, param, true);
    this.#pos = SLOT_HEADER;
    this.#count = 0;
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

  /** Publishes the open slot (nothing when none is open). */
  publish(): void {
    if (this.#at < 0) return;
    this.#l.view.setUint32(this.#at, this.#count, true);
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
  readonly count: number;
  /** Calls `each` with every record's offset and size in `view`. */
  forEach(each: (view: DataView, offset: number, size: number) => void): void;
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
    const at = this.#l.dataAt + slot * this.#l.slotBytes;
    const v = this.#l.view;
    const count = v.getUint32(at, true);
    return {
      source: v.getUint32(at + 4, true),
      generation: v.getUint32(at + 8, true),
      param: v.getFloat64(at + 16, true),
      count,
      forEach(each) {
        let p = at + SLOT_HEADER;
        for (let i = 0; i < count; i++) {
          const size = v.getUint32(p, true);
          each(v, p + 4, size);
          p += 4 + ((size + 3) & ~3);
        }
      },
    };
  }

  /** Frees the slot `peek` returned. */
  release(): void {
    const slot = this.#read % this.#l.slots;
    this.#read++;
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
