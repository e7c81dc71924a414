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
  // Samples every 300 ms: two scrapes back to back fall between two samples (on a loaded machine a
  // sample may still land between them, so up to three pairs are tried; one pair must match).
  const m = createMetricsRegistry({ eventLoopSampleMs: 300 });
  await new Promise((r) => setTimeout(r, 1000));
  let first = await lagStats(() => m.expose());
  assert.deepEqual([...first.keys()].sort(), [...EVENT_LOOP_LAG_STATS].sort(), 'every stat is exposed once');
  let kept = false;
  for (let pair = 0; pair < 3 && !kept; pair++) {
    if (pair > 0) first = await lagStats(() => m.expose());
    // The next scrape at once: no new sample since the last one; the values are kept, not NaN.
    const second = await lagStats(() => m.expose());
    for (const [name, v] of second) assert.ok(Number.isFinite(v) && v >= 0 && v < 10, `${name} = ${v}`);
    kept = [...second].every(([name, v]) => v === first.get(name));
  }
  assert.ok(kept, 'the stats keep their values between samples');
  assert.ok((first.get('nodejs_eventloop_lag_max_seconds') ?? 0) > 0, 'samples were taken');
});

test('event-loop lag stats are the delay beyond the sampling period, not the period', async () => {
  // An idle loop sampled every 500 ms: samples are about 500 ms apart and about 0 ms late (the
  // least late of five, so a busy machine's scheduling delays do not decide it).
  const m = createMetricsRegistry({ eventLoopSampleMs: 500 });
  await new Promise((r) => setTimeout(r, 2700));
  const idle = await lagStats(() => m.expose());
  const min = idle.get('nodejs_eventloop_lag_min_seconds') ?? NaN;
  assert.ok(min >= 0 && min < 0.25, `idle min = ${min} s`);
  // 800 ms of synchronous work right after a scrape: the sample due inside it fires at least 300 ms late.
  const end = performance.now() + 800;
  while (performance.now() < end) { /* blocks the loop */ }
  await new Promise((r) => setTimeout(r, 600));
  const busy = await lagStats(() => m.expose());
  assert.ok((busy.get('nodejs_eventloop_lag_max_seconds') ?? 0) >= 0.3, `busy max = ${busy.get('nodejs_eventloop_lag_max_seconds')} s`);
});
