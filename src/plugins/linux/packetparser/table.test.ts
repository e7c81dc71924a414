import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createEvictionTracker, tableCounts } from './table.js';

test('tableCounts reads struct pp_ct_count (inserted, closed, untracked), zeros when unread', () => {
  assert.deepEqual(tableCounts([7, 3, 1]), { inserted: 7, closed: 3, untracked: 1 });
  assert.deepEqual(tableCounts(undefined), { inserted: 0, closed: 0, untracked: 0 });
});

test('evictions: what is neither live nor deleted (at a close or by the sweep) was evicted, each once', () => {
  const e = createEvictionTracker();
  const c = (inserted: number, closed: number) => ({ inserted, closed, untracked: 0 });
  assert.equal(e.step(c(10, 4), c(10, 4), { expired: 2, live: 4 }), 0, 'all accounted for');
  assert.equal(e.step(c(20, 4), c(20, 4), { expired: 0, live: 10 }), 4, '20 - 4 closed - 2 expired - 10 live');
  assert.equal(e.step(c(20, 4), c(20, 4), { expired: 0, live: 10 }), 0, 'the same four are not counted again');
  assert.equal(e.step(c(30, 9), c(30, 9), { expired: 1, live: 12 }), 2, '30 - 9 closed - 3 expired over the sweeps - 12 live = 6: two more');
});

test('evictions: inserts and closes during the sweep only make the figure smaller until the next sweep; the total never goes down', () => {
  const e = createEvictionTracker();
  const c = (inserted: number, closed: number) => ({ inserted, closed, untracked: 0 });
  // 5 connections made during the walk were counted live but not in `inserted` (read before), 3
  // closed during it in `closed` (read after) and counted live too.
  assert.equal(e.step(c(100, 0), c(100, 3), { expired: 0, live: 105 }), 0);
  assert.equal(e.step(c(105, 3), c(105, 3), { expired: 0, live: 90 }), 12, '105 - 3 - 90: found at the next sweep');
  assert.equal(e.step(c(105, 3), c(105, 3), { expired: 0, live: 95 }), 0, 'a larger live count later does not take evictions back');
});
