import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runSection, runSections } from './diagnose.js';

describe('diagnose sections', () => {
  it('carries the data of a section that answers', async () => {
    const r = await runSection({ name: 'a', collect: () => ({ x: 1 }) }, 1000);
    assert.deepEqual({ ok: r.ok, data: r.ok ? r.data : undefined }, { ok: true, data: { x: 1 } });
  });

  it('carries the error of a section that throws, synchronously or not', async () => {
    const sync = await runSection({ name: 'a', collect: () => { throw new Error('boom'); } }, 1000);
    const async_ = await runSection({ name: 'b', collect: async () => Promise.reject(new Error('later')) }, 1000);
    assert.deepEqual([sync, async_].map((r) => (r.ok ? 'ok' : [r.error, r.timedOut])), [['boom', false], ['later', false]]);
  });

  it('says a section timed out instead of waiting for it', async () => {
    const start = Date.now();
    const r = await runSection({ name: 'slow', collect: () => new Promise(() => {}) }, 50);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.timedOut, true);
    assert.match(!r.ok ? r.error : '', /within 50 ms/);
    assert.ok(Date.now() - start < 1000);
  });

  it('runs every section in order, past one that fails', async () => {
    const out = await runSections([
      { name: 'one', collect: () => 1 },
      { name: 'two', collect: () => { throw new Error('no'); } },
      { name: 'three', collect: () => 3 },
    ], 1000);
    assert.deepEqual(Object.entries(out).map(([k, r]) => [k, r.ok]), [['one', true], ['two', false], ['three', true]]);
  });
});
