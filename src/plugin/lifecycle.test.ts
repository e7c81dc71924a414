import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResourceStack, liveResourceStacks } from './lifecycle.js';

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
