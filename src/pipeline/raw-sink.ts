/**
 * One source's sink for raw records (RawRecordSink), over the pool's hand-offs (workers.ts): each
 * record goes to the worker its peers hash to (`partitionKey`), else to the one the source filled
 * last, else to the least backlogged; a slot is published when full, or at a flush (the end of a
 * drain) once it has been open LINGER_MS (and by the pool's timer after that): small drains fill a
 * slot between them instead of publishing a slot each (counts reach /metrics each second anyway).
 * Never waits: a record no slot takes is counted (worker_backlog), unless no worker runs and
 * the drain is decoded on this thread, which then counts it (the pool's fallback).
 *
 * Records read in place from a BPF ring (`pushRing`) are not copied one by one: adjacent ones make a
 * run, and the run is copied whole (one memcpy) into a filtered slot of every worker that runs, each
 * slot naming the partitions its worker counts (its own, and those of a worker that is gone or whose
 * hand-off is full). This thread then pays a few nanoseconds a record, and each worker hashes every
 * record's key to find its own (handoff.ts: forEachRingRecord).
 */
import type { FlowBatch, FlowConsumer, RawDecoderRef, RawRecordSink } from '../flow/index.js';
import { partitionOf } from '../flow/index.js';
import { forEachRingRecord, MAX_PARTITIONS, ringFilter, RINGBUF_HDR, type HandoffWriter } from './handoff.js';

/** How long a slot may stay open across drains before a flush publishes it (ms). */
export const LINGER_MS = 20;

/** What a sink sees of one worker. */
export interface SinkSlot {
  readonly writer: HandoffWriter;
  alive: boolean;
  /** The source whose records its open slot holds, and when it opened it (performance.now()). */
  owner: number;
  openedAt: number;
}

/** What a sink needs of the pool. */
export interface SinkPool {
  readonly slots: readonly SinkSlot[];
  /** The least backlogged worker with a free slot, that slot opened for `source`; or undefined. */
  pick(source: number, param: number): SinkSlot | undefined;
  publish(s: SinkSlot): void;
  /** Sends the spec to the workers if it changed (before the first slot that needs it). */
  syncSpec(): void;
  generation(): number;
  /** Whether any worker runs. */
  alive(): boolean;
  /** Counts records no slot took (one by default). */
  refused(records?: number): void;
  wantsFlows(): boolean;
  readonly onThread: FlowConsumer;
  readonly fallback: FlowConsumer;
}

export function createRawSink(id: number, ref: RawDecoderRef, pool: SinkPool): RawRecordSink {
  const { slots } = pool;
  const key = ref.partitionKey;
  /** The slot this source filled last (without a partition key). */
  let last: SinkSlot | undefined;
  /** Every hand-off was full: the rest of this drain is counted lost without looking again. */
  let refusing = false;
  /** What `wantsFlows` last answered: the source decodes this drain here too. */
  let decodedHere = false;
  const mine = (s: SinkSlot | undefined): s is SinkSlot => s !== undefined && s.owner === id && s.writer.isOpen;
  /** One of this source's slots of records copied one by one (not a ring run's). */
  const mineRecords = (s: SinkSlot | undefined): s is SinkSlot => mine(s) && s.writer.filter === 0;
  const own = (s: SinkSlot): SinkSlot => {
    s.owner = id;
    s.openedAt = performance.now();
    return s;
  };
  const refuse = (records: number): void => {
    if (!(decodedHere && !pool.alive())) pool.refused(records);
  };
  /** A slot of this source with room for `size` bytes: the preferred one, else any; or undefined. */
  const slotFor = (preferred: SinkSlot | undefined, size: number, param: number): SinkSlot | undefined => {
    if (mine(preferred)) {
      if (mineRecords(preferred) && preferred.writer.fits(size)) return preferred;
      pool.publish(preferred);
    }
    if (refusing) return undefined;
    pool.syncSpec();
    if (key !== undefined && preferred !== undefined && preferred.alive) {
      if (preferred.writer.isOpen) pool.publish(preferred); // another source's
      if (preferred.writer.open(id, param, pool.generation())) return own(preferred);
    }
    // The partition's worker is full or gone: another one (the counts stay exact, only its tables grow),
    // first one whose slot this source holds open; one that is full is published, so that `pick` (which
    // opens only closed slots) can open that worker's next one (else the rest of the drain was refused
    // while that worker had free slots).
    for (const o of slots) {
      if (!o.alive || !mineRecords(o)) continue;
      if (o.writer.fits(size)) return o;
      pool.publish(o);
    }
    const s = pool.pick(id, param);
    return s && own(s);
  };

  // The ring run not yet copied: records adjacent in one view, [runStart, runEnd) with their headers.
  let runView: DataView | undefined;
  let runBytes: Uint8Array = new Uint8Array(0);
  let runStart = 0;
  let runEnd = 0;
  let runRecords = 0;
  const n = slots.length;
  /** A slot's filter names at most MAX_PARTITIONS workers: with more, each record is copied to its worker. */
  const runs = n <= MAX_PARTITIONS;
  const everyPartition = runs ? (1 << n) - 1 : 0;
  /** The longest run a slot holds (the same for every worker's hand-off). */
  const maxRun = slots[0]?.writer.room ?? 0;
  const masks = new Array<number>(n).fill(0);
  /** Turn of the worker a keyless run goes to first. */
  let turn = 0;
  /** Whether worker i can take a run of `bytes` (in its open slot of this source, or a new one). */
  const room = (i: number, bytes: number): boolean => {
    const s = slots[i] as SinkSlot;
    return s.alive && ((mine(s) && s.writer.filter !== 0 && s.writer.fitsBytes(bytes)) || s.writer.canOpen());
  };
  const sendRun = (): void => {
    const records = runRecords;
    if (records === 0 || runView === undefined) return;
    runRecords = 0;
    if (refusing) return refuse(records);
    const bytes = runEnd - runStart;
    pool.syncSpec();
    masks.fill(0);
    let assigned = 0;
    if (key === undefined) {
      // no key: the run to one worker, in turn among those with room
      turn = (turn + 1) % n;
      for (let k = 0; k < n; k++) {
        const i = (turn + k) % n;
        if (room(i, bytes)) {
          masks[i] = everyPartition;
          assigned = everyPartition;
          break;
        }
      }
    } else {
      // each partition to its own worker, else (gone, or its hand-off full) to the next one with room
      for (let p = 0; p < n; p++) {
        for (let k = 0; k < n; k++) {
          const i = (p + k) % n;
          if (room(i, bytes)) {
            masks[i] = (masks[i] as number) | (1 << p);
            assigned |= 1 << p;
            break;
          }
        }
      }
    }
    const g = pool.generation();
    for (let i = 0; i < n; i++) {
      const mask = masks[i] as number;
      if (mask === 0) continue;
      const s = slots[i] as SinkSlot;
      const filter = ringFilter(n, mask);
      const open = mine(s) && s.writer.filter !== 0 ? s.writer.filter & 0xffff : 0;
      if (open !== 0 && s.writer.filter !== filter && (open & ~mask) === 0 && s.writer.fitsBytes(bytes) && !s.writer.canOpen()) {
        // The new filter would need a slot this worker has not got (a full worker's partitions spilled
        // in): its open slot, which names only partitions it is given here, takes its own of this run,
        // and the spilled ones are refused (counted below), instead of all of them.
        assigned &= ~(mask & ~open);
        s.writer.writeRun(runBytes, runStart, bytes, records);
        continue;
      }
      if (!(mine(s) && s.writer.filter === filter && s.writer.fitsBytes(bytes))) {
        if (s.writer.isOpen) pool.publish(s);
        if (!s.writer.open(id, sink.param, g, filter)) {
          assigned &= ~mask; // room() said it could: not reached
          continue;
        }
        own(s);
      }
      s.writer.writeRun(runBytes, runStart, bytes, records);
    }
    if (assigned === 0) {
      refusing = true;
      refuse(records);
    } else if (assigned !== everyPartition) {
      refuse(forEachRingRecord(runView, runStart, runEnd, n, everyPartition & ~assigned, key));
    }
  };

  const sink: RawRecordSink = {
    param: 0,
    push(view, offset, size) {
      const preferred = key !== undefined && size >= key.offset + key.length ? slots[partitionOf(view, offset, size, key, slots.length)] : last;
      const s = slotFor(preferred, size, this.param);
      if (s === undefined || !s.writer.fits(size)) {
        refusing ||= s === undefined;
        if (!(decodedHere && s === undefined && !pool.alive())) pool.refused();
        return;
      }
      last = s;
      s.writer.write(view, offset, size);
    },
    pushRing(view, offset, size) {
      if (!runs) return this.push(view, offset, size);
      const at = offset - RINGBUF_HDR;
      const end = offset + ((size + 7) & ~7);
      if (runRecords > 0 && (view !== runView || at !== runEnd || end - runStart > maxRun)) sendRun();
      if (end - at > maxRun) return this.push(view, offset, size); // more than a slot holds: as one record
      if (view !== runView) {
        runView = view;
        runBytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
      }
      if (runRecords === 0) runStart = at;
      runEnd = end;
      runRecords++;
    },
    copyRun: sendRun,
    flush() {
      sendRun();
      runView = undefined; // the ring's mapping is not held between drains
      runBytes = new Uint8Array(0);
      const old = performance.now() - LINGER_MS;
      for (const s of slots) if (mine(s) && s.openedAt <= old) pool.publish(s);
      last = undefined;
      refusing = false;
      pool.syncSpec();
    },
    get wantsFlows() {
      decodedHere = !pool.alive() || pool.wantsFlows();
      return decodedHere;
    },
    consume(batch: FlowBatch) {
      if (pool.alive()) pool.onThread.consume(batch);
      else pool.fallback.consume(batch);
    },
  };
  return sink;
}
