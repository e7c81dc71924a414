import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { captureLog } from '../../test/fakes/log.js';
import { createMetricsRegistry, defineMetric } from '../metrics/index.js';
import { COLD_PAGES_EVERY_MS, COLD_PAGES_FIRST_MS, HEAP_TRIM_EVERY_MS, exposeAndTrim, releaseColdPagesLater } from './agent-trim.js';

describe('exposeAndTrim', () => {
  it('trims once the response is written, at most once per HEAP_TRIM_EVERY_MS, and passes the body through', async () => {
    const metrics = createMetricsRegistry({ processMetrics: false });
    metrics.gauge(defineMetric('trim_test', 'gauge', 'h', [])).set(1);
    let trims = 0;
    const expose = exposeAndTrim(metrics, () => void trims++);
    const a = await expose();
    assert.match(Buffer.from(a.body).toString('utf8'), /^trim_test 1$/m);
    assert.equal(trims, 0, 'not before the response is written');
    a.release?.();
    assert.equal(trims, 1);
    const b = await expose();
    b.release?.();
    assert.equal(trims, 1, `a second scrape within ${HEAP_TRIM_EVERY_MS} ms does not trim again`);
  });

  it('without a trim (Windows, tests) is exposeBody itself', async () => {
    const metrics = createMetricsRegistry({ processMetrics: false });
    const b = await exposeAndTrim(metrics, undefined)();
    assert.equal(typeof b.release, 'function');
  });
});

describe('releaseColdPagesLater', () => {
  it('releases once start-up is over (info line with the MB), then every COLD_PAGES_EVERY_MS (debug), until disposed', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const log = captureLog();
      let calls = 0;
      const d = releaseColdPagesLater(() => (calls++, { mappings: 12, bytes: 30 * 2 ** 20, refused: 0 }), log);
      mock.timers.tick(COLD_PAGES_FIRST_MS - 1);
      assert.equal(calls, 0);
      mock.timers.tick(1);
      assert.equal(calls, 1);
      assert.deepEqual(log.lines, [{ level: 'info', msg: 'read-only file pages released (they come back on use)', fields: { mappings: 12, releasedMB: 30 } }]);
      mock.timers.tick(COLD_PAGES_EVERY_MS);
      assert.equal(calls, 2);
      assert.equal(log.lines[1]?.level, 'debug');
      d[Symbol.dispose]();
      mock.timers.tick(10 * COLD_PAGES_EVERY_MS);
      assert.equal(calls, 2, 'nothing after dispose');
    } finally {
      mock.timers.reset();
    }
  });

  it('a release that throws is logged as a warning and not tried again; no release (Windows) schedules nothing', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const log = captureLog();
      let calls = 0;
      releaseColdPagesLater(() => {
        calls++;
        throw new Error('cannot read /proc/self/smaps');
      }, log);
      mock.timers.tick(COLD_PAGES_FIRST_MS + 5 * COLD_PAGES_EVERY_MS);
      assert.equal(calls, 1);
      assert.equal(log.lines.length, 1);
      assert.equal(log.lines[0]?.level, 'warn');
      assert.match(JSON.stringify(log.lines[0]?.fields), /smaps/);
      releaseColdPagesLater(undefined, log)[Symbol.dispose]();
    } finally {
      mock.timers.reset();
    }
  });
});
