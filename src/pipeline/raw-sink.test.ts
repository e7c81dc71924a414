/**
 * The raw sink's ring runs (raw-sink.ts) over real hand-offs and no threads: a run goes whole to every
 * worker, each slot naming that worker's partitions; a gone worker's partitions go to another; with
 * more workers than a slot's filter can name, each record is copied to its worker instead (and when
 * that worker is full, to another, slot after slot).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { partition } from '../flow/index.js';
import { HandoffReader, HandoffWriter, MAX_PARTITIONS, RINGBUF_HDR, createHandoffBuffer } from './handoff.js';
import { createRawSink, type SinkPool, type SinkSlot } from './raw-sink.js';

const shape = { slots: 8, slotBytes: 8192 };
const KEY = { offset: 0, length: 4 };
const SIZE = 24;
const STEP = RINGBUF_HDR + SIZE;

/** `n` ring-format records of 24 bytes, each keyed by its first word (its index times a prime). */
function ring(n: number): DataView {
  const v = new DataView(new ArrayBuffer(n * STEP));
  for (let i = 0; i < n; i++) {
    v.setUint32(i * STEP, SIZE, true);
    v.setUint32(i * STEP + RINGBUF_HDR, i * 2654435761, true);
    v.setUint32(i * STEP + RINGBUF_HDR + 4, i, true);
  }
  return v;
}

function pool(workers: number): { pool: SinkPool; readers: HandoffReader[]; refused: () => number } {
  let refused = 0;
  const slots: SinkSlot[] = [];
  const readers: HandoffReader[] = [];
  for (let i = 0; i < workers; i++) {
    const sab = createHandoffBuffer(shape);
    slots.push({ writer: new HandoffWriter(sab, shape), alive: true, owner: -1, openedAt: 0 });
    readers.push(new HandoffReader(sab, shape));
  }
  const p: SinkPool = {
    slots,
    pick: (source, param) => slots.find((s) => s.alive && !s.writer.isOpen && s.writer.open(source, param)),
    publish: (s) => s.writer.publish(),
    syncSpec: () => undefined,
    generation: () => 0,
    alive: () => slots.some((s) => s.alive),
    refused: (k = 1) => void (refused += k),
    wantsFlows: () => false,
    onThread: { consume: () => undefined },
    fallback: { consume: () => undefined },
  };
  return { pool: p, readers, refused: () => refused };
}

/** Each worker's records (their index), and the filters of the slots it read. */
function drain(readers: HandoffReader[]): { got: number[][]; filters: number[][] } {
  const got = readers.map(() => [] as number[]);
  const filters = readers.map(() => [] as number[]);
  readers.forEach((r, w) => {
    for (let s = r.peek(); s; s = r.peek()) {
      (filters[w] as number[]).push(s.filter);
      const taken = s.forEach((v, off) => void (got[w] as number[]).push(v.getUint32(off + 4, true)), KEY);
      r.release(s.filter ? taken : 0);
    }
  });
  return { got, filters };
}

function pushAll(sink: ReturnType<typeof createRawSink>, v: DataView, n: number): void {
  for (let i = 0; i < n; i++) sink.pushRing(v, i * STEP + RINGBUF_HDR, SIZE);
  sink.flush();
}

describe('the raw sink: ring runs', () => {
  it('a run goes whole to each worker, each taking its partition: every record once, in order', () => {
    const { pool: p, readers, refused } = pool(3);
    const sink = createRawSink(0, { source: 's', module: '', options: {}, partitionKey: KEY }, p);
    const v = ring(500);
    pushAll(sink, v, 500);
    for (const s of p.slots) s.writer.publish();
    const { got, filters } = drain(readers);
    for (let w = 0; w < 3; w++) {
      const want = Array.from({ length: 500 }, (_, i) => i).filter((i) => partition(v, i * STEP + RINGBUF_HDR, 4, 3) === w);
      assert.deepEqual(got[w], want, `worker ${w}`);
      assert.ok((filters[w] as number[]).every((f) => f !== 0), 'ring-format slots');
    }
    assert.equal(refused(), 0);
  });

  it('a gone worker\'s partition goes to the next one with room', () => {
    const { pool: p, readers, refused } = pool(2);
    (p.slots[1] as SinkSlot).alive = false;
    const sink = createRawSink(0, { source: 's', module: '', options: {}, partitionKey: KEY }, p);
    pushAll(sink, ring(300), 300);
    for (const s of p.slots) s.writer.publish();
    const { got } = drain(readers);
    assert.deepEqual(got[0], Array.from({ length: 300 }, (_, i) => i), 'the live worker takes both partitions');
    assert.deepEqual(got[1], []);
    assert.equal(refused(), 0);
  });

  it('records copied one by one whose worker is full go to another, slot after slot, none refused while it has room', () => {
    const { pool: p, readers, refused } = pool(2);
    const full = (p.slots[1] as SinkSlot).writer;
    while (full.open(9, 0)) full.publish(); // worker 1's hand-off full, nothing read
    const sink = createRawSink(0, { source: 's', module: '', options: {}, partitionKey: KEY }, p);
    const v = ring(2000);
    // Worker 1's records only, more than three of worker 0's slots: each time worker 0's open slot fills,
    // the next record must open its next slot.
    const ones = Array.from({ length: 2000 }, (_, i) => i).filter((i) => partition(v, i * STEP + RINGBUF_HDR, 4, 2) === 1);
    assert.ok(ones.length * (4 + SIZE) > 3 * shape.slotBytes, `${ones.length} records`);
    for (const i of ones) sink.push(v, i * STEP + RINGBUF_HDR, SIZE);
    sink.flush();
    for (const s of p.slots) if (s.writer.isOpen) s.writer.publish();
    assert.equal(refused(), 0);
    const { got } = drain(readers.slice(0, 1));
    assert.deepEqual(got[0], ones, 'worker 0 took them all, in order');
  });

  it('a full worker\'s partitions spilled onto one with no slot to spare: its open slot keeps its own records, only the spilled ones are refused', () => {
    const { pool: p, readers, refused } = pool(2);
    const [a, b] = p.slots.map((s) => s.writer) as [HandoffWriter, HandoffWriter];
    for (let k = 0; k < shape.slots - 1; k++) {
      a.open(9, 0);
      a.publish(); // worker 0: every slot but one taken, nothing read
    }
    const sink = createRawSink(0, { source: 's', module: '', options: {}, partitionKey: KEY }, p);
    const v = ring(100);
    for (let i = 0; i < 50; i++) sink.pushRing(v, i * STEP + RINGBUF_HDR, SIZE);
    sink.copyRun(); // both workers open a slot for their partition; worker 0 has none left to open
    b.publish();
    while (b.open(9, 0)) b.publish(); // worker 1 full
    for (let i = 50; i < 100; i++) sink.pushRing(v, i * STEP + RINGBUF_HDR, SIZE);
    sink.copyRun(); // worker 1's partition spills onto worker 0, whose open slot names only its own
    const part = (i: number): number => partition(v, i * STEP + RINGBUF_HDR, 4, 2);
    const second = Array.from({ length: 50 }, (_, i) => 50 + i);
    assert.equal(refused(), second.filter((i) => part(i) === 1).length, 'the spilled partition\'s records of the second run, and no more');
    a.publish();
    const { got } = drain(readers.slice(0, 1));
    assert.deepEqual(got[0], Array.from({ length: 100 }, (_, i) => i).filter((i) => part(i) === 0), 'worker 0 counted its own records of both runs');
  });

  it(`more than ${MAX_PARTITIONS} workers: each record is copied to its worker (push), none lost`, () => {
    const { pool: p, readers, refused } = pool(MAX_PARTITIONS + 1);
    const sink = createRawSink(0, { source: 's', module: '', options: {}, partitionKey: KEY }, p);
    pushAll(sink, ring(400), 400);
    for (const s of p.slots) s.writer.publish();
    const { got, filters } = drain(readers);
    assert.equal(got.flat().length, 400);
    assert.deepEqual(got.flat().sort((a, b) => a - b), Array.from({ length: 400 }, (_, i) => i));
    assert.ok(filters.flat().every((f) => f === 0), 'slots of records copied one by one');
    assert.equal(refused(), 0);
  });
});
