import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlow, fanOut, newFlow, TCP_FLAG_SLOTS, type FlowBatch } from './index.js';

describe('createFlow', () => {
  it('sets every field, in one order, whatever the caller gives (one hidden class)', () => {
    const a = createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED' });
    const b = createFlow({ dstIp: 'fd00::2', verdict: 'DNS', srcIp: 'fd00::1', tcpFlagCounts: new Array<number>(TCP_FLAG_SLOTS.length).fill(0), packets: 3, isReply: undefined });
    assert.deepEqual(Object.keys(a), Object.keys(b));
    assert.deepEqual(Object.keys(a), Object.keys(newFlow('DROPPED')), 'the hot decoders\' factory: the same fields in the same order');
    assert.equal(a.ipVersion, 4);
    assert.equal(b.ipVersion, 6);
    assert.equal(a.packets, 1);
    assert.equal(b.packets, 3);
    assert.ok(a.timeMs > 0, 'now, by default');
    assert.equal(a.observationPoint, 'UNKNOWN');
    assert.equal(TCP_FLAG_SLOTS.length, 10);
  });
});

describe('fanOut', () => {
  it('hands each batch to every consumer and stops a consumer\'s error there', () => {
    const seen: FlowBatch[] = [];
    const errors: number[] = [];
    const out = fanOut([{ consume: () => { throw new Error('x'); } }, { consume: (b) => seen.push(b) }], (_e, i) => errors.push(i));
    out.consume({ source: 't', flows: [] });
    assert.equal(seen.length, 1);
    assert.deepEqual(errors, [0]);
  });
});
