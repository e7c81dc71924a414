import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakeClock } from '../../test/fakes/clock.js';
import { TokenBucket, WorkQueue } from './workqueue.js';

describe('WorkQueue', () => {
  it('does not queue a waiting key twice', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('a');
    q.add('b');
    assert.equal(q.length, 2);
    assert.equal(await q.get(), 'a');
    assert.equal(await q.get(), 'b');
  });

  it('holds a key being processed and re-queues it once done if it was added meanwhile', async () => {
    const q = new WorkQueue();
    q.add('a');
    const k = await q.get();
    q.add('a');
    q.add('a');
    assert.equal(q.length, 0, 'not handed to a second worker while processing');
    q.done(k as string);
    assert.equal(q.length, 1);
    assert.equal(await q.get(), 'a');
  });

  it('backs off per key exponentially and resets on forget', () => {
    const clock = fakeClock();
    const q = new WorkQueue({ clock, baseDelayMs: 10, maxDelayMs: 1000, qps: 1000, burst: 1000 });
    q.addRateLimited('a');
    clock.advance(9);
    assert.equal(q.length, 0);
    clock.advance(1);
    assert.equal(q.length, 1);
    void q.get().then((k) => q.done(k as string));
    q.addRateLimited('a'); // 20 ms
    q.addRateLimited('a'); // 40 ms, but the earlier time (20) wins for a waiting key
    assert.equal(q.failures('a'), 3);
    q.forget('a');
    assert.equal(q.failures('a'), 0);
  });

  it('caps retries with the global bucket', () => {
    const clock = fakeClock();
    const b = new TokenBucket(10, 2, clock);
    assert.equal(b.reserve(), 0);
    assert.equal(b.reserve(), 0);
    assert.equal(b.reserve(), 100);
    assert.equal(b.reserve(), 200);
    clock.advance(1000);
    assert.equal(b.reserve(), 0);
  });

  it('hands out low keys only when no high key waits, and moves a waiting low key up when it is added high', async () => {
    const q = new WorkQueue();
    for (const k of ['l1', 'l2', 'l3']) q.add(k, 'low');
    q.add('h1');
    q.add('l2'); // a change to a key of the pass: up to the high lane, queued once
    q.add('h2', 'high');
    q.add('h1', 'low'); // already waiting high: stays high, not queued twice
    assert.equal(q.length, 5);
    assert.equal(q.lowLength, 2);
    const order: string[] = [];
    while (q.length > 0) {
      const k = (await q.get()) as string;
      order.push(k);
      q.done(k);
    }
    assert.deepEqual(order, ['h1', 'l2', 'h2', 'l1', 'l3']);
  });

  it('keeps a key\'s lane while it is processed and queues it there once done', async () => {
    const q = new WorkQueue();
    q.add('a', 'low');
    const a = (await q.get()) as string;
    q.add('a', 'low');
    q.add('b', 'low');
    q.add('a'); // changed while processed: high once done
    q.done(a);
    assert.equal(q.length, 2);
    assert.equal(await q.get(), 'a');
    assert.equal(await q.get(), 'b');
    assert.equal(q.length, 0);
  });

  it('wakes waiting workers on shutdown', async () => {
    const q = new WorkQueue();
    const w = q.get();
    q.shutdown();
    assert.equal(await w, undefined);
    q.add('x');
    assert.equal(q.length, 0);
  });
});
