import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResourceStack, liveResourceStacks, poll } from './lifecycle.js';

describe('ResourceStack', () => {
  it('releases in reverse order, once, and carries on past failures', async () => {
    const order: string[] = [];
    const before = liveResourceStacks();
    const s = new ResourceStack();
    s.defer(() => order.push('a'));
    s.use({ [Symbol.dispose]: () => { order.push('b'); throw new Error('b failed'); } });
    s.use({ [Symbol.asyncDispose]: async () => { order.push('c'); } });
    s.defer(() => { order.push('d'); throw new Error('d failed'); });
    await assert.rejects(s[Symbol.asyncDispose](), (e: unknown) => e instanceof AggregateError && e.errors.length === 2);
    assert.deepEqual(order, ['d', 'c', 'b', 'a']);
    await assert.rejects(s[Symbol.asyncDispose]()); // the same outcome, nothing released twice
    assert.deepEqual(order, ['d', 'c', 'b', 'a']);
    assert.equal(liveResourceStacks(), before);
  });

  it('build() undoes what it acquired when filling fails', async () => {
    const released: string[] = [];
    const before = liveResourceStacks();
    await assert.rejects(
      ResourceStack.build(async (s) => {
        s.defer(() => released.push('first'));
        s.defer(() => released.push('second'));
        throw new Error('attach failed');
      }),
      /attach failed/,
    );
    assert.deepEqual(released, ['second', 'first']);
    assert.equal(liveResourceStacks(), before);
  });

  it('releases at once what is added after disposal', async () => {
    const s = new ResourceStack();
    await s[Symbol.asyncDispose]();
    let released = false;
    s.defer(() => { released = true; });
    await new Promise((r) => setImmediate(r));
    assert.equal(released, true);
  });
});

describe('poll', () => {
  it('runs at once, never overlaps, reports errors, and stops after the run in flight', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const errors: unknown[] = [];
    let release: () => void = () => undefined;
    const s = await ResourceStack.build((st) => poll(st, 5, async (signal) => {
      runs++;
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        if (runs === 2) throw new Error('tick failed');
        if (runs === 3) await new Promise<void>((r) => { release = r; });
        if (runs < 3) assert.equal(signal.aborted, false);
      } finally {
        running--;
      }
    }, (e) => errors.push(e)));
    assert.equal(runs, 1, 'the first run is awaited by start');
    // Runs 2 and 3 come 5 ms apart on an idle machine; a loaded one (a full make test) delays the timers,
    // so wait for the third rather than a fixed time, then check that the third, held, holds back the rest.
    const deadline = Date.now() + 10_000;
    while (runs < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.equal(runs, 3, 'the runs after the first, the failed one included');
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(runs, 3, 'a run in flight holds back the next ones');
    assert.equal(maxRunning, 1);
    assert.match(String(errors[0]), /tick failed/);
    let stopped = false;
    const stopping = s[Symbol.asyncDispose]().then(() => { stopped = true; });
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(stopped, false, 'stop waits for the run in flight');
    release();
    await stopping;
    const after = runs;
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(runs, after, 'nothing runs after stop');
  });
});
