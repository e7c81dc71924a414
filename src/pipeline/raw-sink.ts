/**
 * One source's sink for raw records (RawRecordSink), over the pool's hand-offs (workers.ts): each
 * record goes to the worker its peers hash to (`partitionKey`), else to the one the source filled
 * last, else to the least backlogged; a slot is published when full, or at a flush (the end of a
 * drain) once it has been open LINGER_MS (and by the pool's timer after that): small drains fill a
 * slot between them instead of publishing a slot each (counts reach /metrics each second anyway).
 * Never waits: a record no slot takes is counted (worker_backlog), unless no worker runs and
 * the drain is decoded on this thread, which then counts it (the pool's fallback).
 */
import type { FlowBatch, FlowConsumer, RawDecoderRef, RawRecordSink } from '../flow/index.js';
import type { HandoffWriter } from './handoff.js';

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
  /** Counts one record no slot took. */
  refused(): void;
  wantsFlows(): boolean;
  readonly onThread: FlowConsumer;
  readonly fallback: FlowConsumer;
}

/**
 * Which of `n` workers a record goes to, by a hash of its `length` key bytes at `offset`: each 32-bit
 * word mixed in with a multiply and a shift, then murmur3's finalizer, so every bit of every word
 * reaches the low bits `% n` reads. (A multiply alone carries bits only upwards: with FNV over words the
 * low 16 bits of the hash came from the low 16 bits of each word, an IPv4 address's first two octets,
 * the same for every pod of a cluster, and 94 % of the records went to one of two workers.)
 */
export function partition(v: DataView, offset: number, length: number, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i + 4 <= length; i += 4) {
    h = Math.imul(h ^ v.getUint32(offset + i, true), 0x9e3779b1);
    h ^= h >>> 15;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % n;
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
  const own = (s: SinkSlot): SinkSlot => {
    s.owner = id;
    s.openedAt = performance.now();
    return s;
  };
  /** A slot of this source with room for `size` bytes: the preferred one, else any; or undefined. */
  const slotFor = (preferred: SinkSlot | undefined, size: number, param: number): SinkSlot | undefined => {
    if (mine(preferred)) {
      if (preferred.writer.fits(size)) return preferred;
      pool.publish(preferred);
    }
    if (refusing) return undefined;
    pool.syncSpec();
    if (key !== undefined && preferred !== undefined && preferred.alive) {
      if (preferred.writer.isOpen) pool.publish(preferred); // another source's
      if (preferred.writer.open(id, param, pool.generation())) return own(preferred);
    }
    // The partition's worker is full or gone: another one (the counts stay exact, only its tables grow),
    // first one whose slot this source holds open.
    for (const o of slots) if (o.alive && mine(o) && o.writer.fits(size)) return o;
    const s = pool.pick(id, param);
    return s && own(s);
  };
  return {
    param: 0,
    push(view, offset, size) {
      const preferred = key !== undefined && size >= key.offset + key.length ? slots[partition(view, offset + key.offset, key.length, slots.length)] : last;
      const s = slotFor(preferred, size, this.param);
      if (s === undefined || !s.writer.fits(size)) {
        refusing ||= s === undefined;
        if (!(decodedHere && s === undefined && !pool.alive())) pool.refused();
        return;
      }
      last = s;
      s.writer.write(view, offset, size);
    },
    flush() {
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
}
