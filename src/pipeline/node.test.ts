/**
 * The flow pipeline without an API server: whether plugins get a flow sink follows the config once
 * (neither pod level nor Hubble: none), consumers get the enriched batch in order, and a consumer
 * that throws loses only its own copy, counted as lost_events_counter{type="pipeline"}.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testAgentConfig } from '../../test/ebpf/fake-context.js';
import { createFlow, type FlowBatch } from '../flow/index.js';
import { silentLogger } from '../log/index.js';
import { createMetricsRegistry } from '../metrics/index.js';
import { startNodePipeline } from './index.js';

const batch = (): FlowBatch => ({ source: 'test', flows: [createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED' })] });
const hubbleOn = { hubble: { ...testAgentConfig().hubble, enabled: true } };

describe('the node flow pipeline, standalone', () => {
  it('gives plugins no flow sink when neither pod level nor Hubble wants flows', async () => {
    await using p = await startNodePipeline({ agent: testAgentConfig({ enablePodLevel: false }), metrics: createMetricsRegistry({ processMetrics: false }), log: silentLogger, watches: undefined, consumers: [] });
    assert.equal(p.flows, undefined);
    assert.equal(p.module, undefined);
    assert.equal(p.interest.bypass, true);
  });

  it('with Hubble only: one enriched batch reaches every consumer, and a throwing one is counted, not fatal', async () => {
    const metrics = createMetricsRegistry({ processMetrics: false });
    const got: FlowBatch[] = [];
    const throwing = { consume: (): void => { throw new Error('boom'); } };
    await using p = await startNodePipeline({
      agent: testAgentConfig({ enablePodLevel: false, ...hubbleOn }), metrics, log: silentLogger, watches: undefined,
      consumers: [{ name: 'broken', consumer: throwing }, { name: 'hubble', consumer: { consume: (b) => void got.push(b) } }],
    });
    assert.ok(p.flows);
    assert.equal(p.module, undefined, 'no Metrics Module without enablePodLevel');
    p.flows.consume(batch());
    assert.equal(got.length, 1);
    assert.equal(got[0]?.flows[0]?.source, undefined, 'no lookup without Kubernetes: the enricher leaves endpoints unknown');
    assert.match((await metrics.expose()).body, /lost_events_counter\{type="pipeline",reason="broken"\} 1/);
  });

  it('with pod level: a Metrics Module beside the handed-in consumers, each fed', async () => {
    const seen: string[] = [];
    await using p = await startNodePipeline({
      agent: testAgentConfig({ enablePodLevel: true, ...hubbleOn }), metrics: createMetricsRegistry({ processMetrics: false }), log: silentLogger, watches: undefined,
      consumers: [{ name: 'hubble', consumer: { consume: () => void seen.push('hubble') } }],
    });
    assert.ok(p.module);
    assert.ok(p.flows);
    p.flows.consume(batch());
    assert.deepEqual(seen, ['hubble']);
  });
});
