import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { captureLog } from '../../test/fakes/log.js';
import { HEAP_CHECK_EVERY_MS, HEAP_GROWTH_BYTES, collector, compactHeapWhenGrown, oldSpaceCommitted, oldSpaceUsed } from './heap-compaction.js';

const MB = 2 ** 20;

describe('compactHeapWhenGrown', () => {
  it('collects only once the old space has grown HEAP_GROWTH_BYTES since it was last found collected, by it or by V8', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const log = captureLog();
      let size = 10 * MB;
      let collections = 0;
      const d = compactHeapWhenGrown(log, { used: () => size, collect: () => { collections++; size = 9 * MB; } });
      size += HEAP_GROWTH_BYTES - 1;
      mock.timers.tick(HEAP_CHECK_EVERY_MS);
      assert.equal(collections, 0, 'grown less than the threshold');
      size += 1;
      mock.timers.tick(HEAP_CHECK_EVERY_MS);
      assert.equal(collections, 1);
      assert.deepEqual(log.lines.map((l) => [l.level, l.msg]), [['debug', 'old space collected']]);
      assert.equal(log.lines[0]?.fields?.['afterMB'], 9);
      // V8 collected on its own (smaller than the base): growth counts from there
      size = 7 * MB;
      mock.timers.tick(HEAP_CHECK_EVERY_MS);
      size = 7 * MB + HEAP_GROWTH_BYTES;
      mock.timers.tick(HEAP_CHECK_EVERY_MS);
      assert.equal(collections, 2);
      d[Symbol.dispose]();
      size += 100 * MB;
      mock.timers.tick(10 * HEAP_CHECK_EVERY_MS);
      assert.equal(collections, 2, 'nothing after dispose');
    } finally {
      mock.timers.reset();
    }
  });

  it('a collection that throws is logged as a warning and not tried again', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const log = captureLog();
      let size = 0;
      let calls = 0;
      compactHeapWhenGrown(log, { used: () => (size += HEAP_GROWTH_BYTES), collect: () => { calls++; throw new Error('no gc'); } });
      mock.timers.tick(5 * HEAP_CHECK_EVERY_MS);
      assert.equal(calls, 1);
      assert.deepEqual(log.lines.map((l) => l.level), ['warn']);
      assert.match(JSON.stringify(log.lines[0]?.fields), /no gc/);
    } finally {
      mock.timers.reset();
    }
  });
});

describe('collector', () => {
  it('gives V8\'s full collection in a process started without --expose-gc: the old space emptied of dropped objects and its pages given back', () => {
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'this test runs without --expose-gc');
    const gc = collector();
    gc();
    const empty = oldSpaceUsed();
    // objects that survive young collections (promoted to the old space), then dropped
    let keep: object[][] = [];
    for (let i = 0; i < 40; i++) keep.push(Array.from({ length: 4000 }, (_, j) => ({ i, j, s: `x${j}` })));
    for (let i = 0; i < 20; i++) new Array(200_000).fill(i); // young collections meanwhile
    const grown = oldSpaceUsed();
    assert.ok(grown - empty > 4 * MB, `the old space grew by ${((grown - empty) / MB).toFixed(1)} MB`);
    keep = [];
    assert.equal(keep.length, 0);
    gc();
    const after = oldSpaceUsed();
    assert.ok(after - empty < MB, `after the collection ${((after - empty) / MB).toFixed(1)} MB more than at the start (grown ${((grown - empty) / MB).toFixed(1)} MB)`);
    // the pages too, not only the objects (a plain gc() keeps them committed)
    assert.ok(oldSpaceCommitted() - after < 2 * MB, `committed ${(oldSpaceCommitted() / MB).toFixed(1)} MB for ${(after / MB).toFixed(1)} MB in use`);
    assert.equal(collector(), gc, 'the same function every time');
  });
});
