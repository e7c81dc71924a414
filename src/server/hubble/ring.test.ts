import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { createFlow } from '../../flow/index.js';
import { createFlowRing } from './ring.js';

describe('flow ring', () => {
  it('keeps the last N by sequence number and wakes a waiter once per write', () => {
    const ring = createFlowRing(3);
    let woken = 0;
    ring.onWrite(() => woken++);
    ring.consume({ source: 't', flows: [1, 2, 3, 4, 5].map((i) => createFlow({ srcIp: `10.0.0.${i}`, dstIp: '10.0.0.9', verdict: 'FORWARDED' })) });
    ring.consume({ source: 't', flows: [] });
    assert.equal(woken, 1);
    assert.deepEqual(ring.stats(), { size: 3, capacity: 3, seen: 5 });
    assert.equal(ring.tail(), 2);
    assert.equal(ring.at(1), undefined);
    assert.equal(ring.at(2)?.srcIp, '10.0.0.3');
    assert.equal(ring.at(4)?.srcIp, '10.0.0.5');
    assert.equal(ring.at(5), undefined);
  });
});
