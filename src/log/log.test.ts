import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { BoundedQueueSink } from './index.js';

test('BoundedQueueSink: lines beyond the queued bound are dropped and counted; the first line written once the queue drains says how many', async () => {
  const got: string[] = [];
  const state = { released: false };
  const pending: (() => void)[] = [];
  // A pipe nobody reads: writes are queued (their callbacks wait) until released.
  const stuck = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _e, cb) {
      got.push(chunk.toString());
      if (!state.released) pending.push(cb);
      else cb();
    },
  });
  const sink = new BoundedQueueSink(stuck, 1000);
  const line = `${'x'.repeat(99)}\n`;
  for (let i = 0; i < 100; i++) sink.write(line);
  await new Promise((r) => setImmediate(r));
  assert.ok(stuck.writableLength <= 1100, `queued ${stuck.writableLength} bytes`);
  assert.equal(sink.dropped, 89, 'eleven lines fit in the bound (1 written, 10 queued up to 1000 bytes), the rest dropped');
  state.released = true;
  for (const cb of pending.splice(0)) cb();
  await new Promise((r) => setImmediate(r));
  sink.write('after\n');
  await new Promise((r) => setImmediate(r));
  const all = got.join('');
  const note = all.split('\n').find((l) => l.includes('log lines dropped'));
  assert.ok(note, all.slice(-300));
  assert.equal((JSON.parse(note) as { dropped: number }).dropped, 89);
  assert.ok(all.endsWith('after\n'));
  assert.equal(sink.dropped, 0);
});
