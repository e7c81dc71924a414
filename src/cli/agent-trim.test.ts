import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMetricsRegistry, defineMetric } from '../metrics/index.js';
import { HEAP_TRIM_EVERY_MS, exposeAndTrim } from './agent.js';

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
