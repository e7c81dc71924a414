import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlow, type Endpoint, type FlowBatch } from '../flow/index.js';
import { createEnricher } from './index.js';

const pod: Endpoint = { namespace: 'ns', podName: 'p', workloadKind: 'Deployment', workloadName: 'd', service: '', nodeName: 'n', zone: '', labels: {} };

describe('enricher', () => {
  it('fills both sides from the lookup, IPv6 too, and hands the batch on', () => {
    const seen: FlowBatch[] = [];
    const table = new Map([['10.0.0.1', pod], ['fd00::1', pod]]);
    const e = createEnricher({ byIp: (ip) => table.get(ip) }, { consume: (b) => seen.push(b) });
    const flows = [createFlow({ srcIp: '10.0.0.1', dstIp: '8.8.8.8', verdict: 'FORWARDED' }), createFlow({ srcIp: 'fd00::2', dstIp: 'fd00::1', verdict: 'FORWARDED' })];
    e.consume({ source: 't', flows });
    assert.equal(seen.length, 1);
    assert.equal(flows[0]?.source, pod);
    assert.equal(flows[0]?.destination, undefined);
    assert.equal(flows[1]?.destination, pod);
    assert.deepEqual(e.stats(), { flows: 2, enrichedSides: 2 });
  });
});
