import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateMetricsConfiguration } from './metrics-configuration.js';

describe('validateMetricsConfiguration', () => {
  it('accepts a good spec', () => {
    assert.deepEqual(validateMetricsConfiguration({ contextOptions: [{ metricName: 'forward_count', sourceLabels: ['IP', 'workload'], additionalLabels: ['is_reply'], ttl: '1m30s' }], namespaces: { include: ['a'] } }), []);
  });
  it('names every problem', () => {
    const errs = validateMetricsConfiguration({ contextOptions: [{ metricName: 'nope' }, { metricName: 'dns_request_count', destinationLabels: ['pod'], ttl: 'x' }], namespaces: { include: [], exclude: [] } });
    assert.equal(errs.length, 4, errs.join('\n'));
  });
  it('rejects an empty spec', () => {
    assert.ok(validateMetricsConfiguration(undefined).length > 0);
    assert.ok(validateMetricsConfiguration({ contextOptions: [], namespaces: {} }).length === 2);
  });
});
