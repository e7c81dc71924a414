import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_LOOP_LAG_STATS } from './event-loop.js';
import { createMetricsRegistry } from './registry.js';

/** The value of each nodejs_eventloop_lag_*_seconds stat in one exposition. */
async function lagStats(expose: () => Promise<{ body: string }>): Promise<Map<string, number>> {
  const { body } = await expose();
  const out = new Map<string, number>();
  for (const line of body.split('\n')) {
    const [name, value] = line.split(' ');
    if (name && EVENT_LOOP_LAG_STATS.includes(name)) out.set(name, Number(value));
  }
  return out;
}

test('event-loop lag stats stay finite when scrapes come faster than the monitor samples', async () => {
  const m = createMetricsRegistry({ eventLoopSampleMs: 20 });
  await new Promise((r) => setTimeout(r, 200));
  const first = await lagStats(() => m.expose());
  assert.deepEqual([...first.keys()].sort(), [...EVENT_LOOP_LAG_STATS].sort(), 'every stat is exposed once');
  // The next scrape at once: no new sample since the last one; the values are kept, not NaN.
  const second = await lagStats(() => m.expose());
  for (const [name, v] of second) {
    assert.ok(Number.isFinite(v) && v >= 0 && v < 10, `${name} = ${v}`);
    assert.equal(v, first.get(name), `${name} keeps its value without new samples`);
  }
  assert.ok((first.get('nodejs_eventloop_lag_max_seconds') ?? 0) > 0, 'samples were taken');
});
