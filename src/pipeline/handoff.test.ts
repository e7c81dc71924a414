/**
 * The hand-off ring (handoff.ts), writer and reader on one thread: records come out as they went in,
 * in order, whatever their size; a full ring refuses a slot until the reader frees one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HandoffReader, HandoffWriter, RINGBUF_BUSY, RINGBUF_DISCARD, SLOT_HEADER, createHandoffBuffer, ringFilter } from './handoff.js';
import { partition } from '../flow/index.js';

const shape = { slots: 4, slotBytes: 256 };

function bytes(size: number, seed: number): DataView {
  const v = new DataView(new ArrayBuffer(size + 3));
  for (let i = 0; i < size; i++) v.setUint8(3 + i, (seed * 31 + i) & 255);
  return v;
}

function read(r: HandoffReader): { source: number; generation: number; param: number; records: number[][] } | undefined {
  const s = r.peek();
  if (!s) return undefined;
  const records: number[][] = [];
  s.forEach((v, off, size) => records.push(Array.from({ length: size }, (_, i) => v.getUint8(off + i))));
  r.release();
  return { source: s.source, generation: s.generation, param: s.param, records };
}

describe('the hand-off ring', () => {
  it('records of any size come out whole and in order, with the slot\'s source, generation and param', () => {
    const sab = createHandoffBuffer(shape);
    const w = new HandoffWriter(sab, shape);
    const r = new HandoffReader(sab, shape);
    assert.equal(r.peek(), undefined);
    const sizes = [1, 4, 7, 120, 13];
    assert.ok(w.open(3, 1.5e12 + 0.25, 7));
    for (const [i, n] of sizes.entries()) {
      assert.ok(w.fits(n));
      w.write(bytes(n, i), 3, n);
    }
    assert.equal(r.peek(), undefined, 'nothing is seen before it is published');
    assert.equal(w.backlog(), 1);
    w.publish();
    const got = read(r);
    assert.deepEqual(got && [got.source, got.generation, got.param], [3, 7, 1.5e12 + 0.25]);
    assert.deepEqual(got?.records, sizes.map((n, i) => Array.from({ length: n }, (_, k) => (i * 31 + k) & 255)));
    assert.equal(w.backlog(), 0);
  });

  it('a slot holds what fits; a full ring refuses to open one until the reader frees a slot', () => {
    const sab = createHandoffBuffer(shape);
    const w = new HandoffWriter(sab, shape);
    const r = new HandoffReader(sab, shape);
    const rec = bytes(120, 1);
    const perSlot = Math.floor((shape.slotBytes - SLOT_HEADER) / 124);
    for (let s = 0; s < shape.slots; s++) {
      assert.ok(w.open(s, 0));
      let n = 0;
      while (w.fits(120)) {
        w.write(rec, 3, 120);
        n++;
      }
      assert.equal(n, perSlot);
      w.publish();
    }
    assert.equal(w.open(9, 0), false, 'every slot is unread');
    assert.equal(w.backlog(), shape.slots);
    assert.equal(read(r)?.source, 0);
    assert.ok(w.open(9, 0), 'the freed slot is reused');
    w.write(rec, 3, 120);
    w.publish();
    const order = [read(r), read(r), read(r), read(r)].map((x) => x?.source);
    assert.deepEqual(order, [1, 2, 3, 9], 'in publishing order, across the wrap');
    assert.equal(read(r), undefined);
  });

  it('wait() resolves when the writer publishes, and interrupt() ends it at once', async () => {
    const sab = createHandoffBuffer(shape);
    const w = new HandoffWriter(sab, shape);
    const r = new HandoffReader(sab, shape);
    const t0 = performance.now();
    const waiting = r.wait(5000);
    setTimeout(() => {
      w.open(1, 0);
      w.publish();
    }, 20);
    await waiting;
    assert.ok(performance.now() - t0 < 2000);
    assert.equal(read(r)?.source, 1);
    const again = r.wait(5000);
    r.interrupt();
    await again;
    assert.ok(performance.now() - t0 < 2000);
  });

  it('a ring run copied whole: each reader takes its partitions\' records, discarded ones by none; what a reader took and left is known to the writer', () => {
    // 12 ring records of 8-byte keys (len 8..20), the 5th discarded, a busy header after them ends the run
    const key = { offset: 0, length: 8 };
    const ring = new DataView(new ArrayBuffer(512));
    const recs: { at: number; len: number; discarded: boolean }[] = [];
    let p = 0;
    for (let i = 0; i < 12; i++) {
      const len = 8 + (i % 3) * 6;
      ring.setUint32(p, len | (i === 4 ? RINGBUF_DISCARD : 0), true);
      for (let b = 0; b < len; b++) ring.setUint8(p + 8 + b, (i * 37 + b * 11) & 255);
      recs.push({ at: p + 8, len, discarded: i === 4 });
      p += 8 + ((len + 7) & ~7);
    }
    ring.setUint32(p, RINGBUF_BUSY | 16, true);
    const end = p + 24; // the run as copied includes a busy record's header: the walk stops there
    const n = 2;
    const got: number[][][] = [[], []];
    const big = { slots: 2, slotBytes: 1024 };
    const writers = [0, 1].map(() => createHandoffBuffer(big));
    for (const w of [0, 1]) {
      const writer = new HandoffWriter(writers[w] as SharedArrayBuffer, big);
      assert.ok(writer.open(5, 2.5, 3, ringFilter(n, 1 << w)));
      assert.ok(writer.fitsBytes(end));
      writer.writeRun(new Uint8Array(ring.buffer), 0, end, 12);
      writer.publish();
      const reader = new HandoffReader(writers[w] as SharedArrayBuffer, big);
      const slot = reader.peek();
      assert.ok(slot);
      assert.deepEqual([slot.source, slot.param, slot.generation, slot.filter], [5, 2.5, 3, ringFilter(n, 1 << w)]);
      assert.equal(writer.unread(() => key), slot.forEach(undefined, key), 'unread: what the reader would take');
      const taken = slot.forEach((v, off, size) => void (got[w] as number[][]).push([v.getUint8(off), v.getUint8(off + size - 1), size]), key);
      reader.release(taken);
      assert.equal(writer.takenSince(), taken);
      assert.equal(writer.takenSince(), 0);
      assert.equal(writer.unread(() => key), 0);
    }
    const live = recs.filter((r) => !r.discarded);
    const want = [0, 1].map((w) => live.filter((r) => partition(ring, r.at, 8, n) === w).map((r) => [ring.getUint8(r.at), ring.getUint8(r.at + r.len - 1), r.len]));
    assert.deepEqual(got, want);
    assert.equal((got[0] as number[][]).length + (got[1] as number[][]).length, 11, 'every live record once, the discarded one never');
    assert.ok((got[0] as number[][]).length > 0 && (got[1] as number[][]).length > 0);
  });
});
