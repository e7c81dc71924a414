import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff, backoffDelay } from './backoff.js';

describe('backoff (the one retry backoff: k8s reflectors and the plugin manager)', () => {
  it('doubles from initialMs to maxMs; no jitter at random() = 0.5', () => {
    const b = { initialMs: 100, maxMs: 1000, jitter: 0.5 };
    assert.deepEqual([1, 2, 3, 4, 5, 6, 40].map((n) => backoffDelay(b, n, () => 0.5)), [100, 200, 400, 800, 1000, 1000, 1000]);
  });

  it('jitters by a factor in [1 - jitter, 1 + jitter) and never waits longer than maxMs', () => {
    const b = { initialMs: 1000, maxMs: 60_000, jitter: 0.2 };
    assert.equal(backoffDelay(b, 1, () => 0), 800);
    assert.equal(backoffDelay(b, 1, () => 0.999_999), 1200);
    assert.equal(backoffDelay(b, 7, () => 0), 48_000);
    assert.equal(backoffDelay(b, 7, () => 0.999_999), 60_000, 'capped after the jitter');
    assert.equal(backoffDelay({ ...b, jitter: 0 }, 1, Math.random), 1000);
  });

  it('Backoff counts failures; reset starts again (the reflector: jitter 0.5 = a factor in [0.5, 1.5))', () => {
    const b = new Backoff({ initialMs: 800, maxMs: 30_000, jitter: 0.5 }, () => 0);
    assert.deepEqual([b.next(), b.next(), b.next()], [400, 800, 1600]);
    assert.equal(b.failures, 3);
    b.reset();
    assert.equal(b.failures, 0);
    assert.equal(b.next(), 400);
  });
});
