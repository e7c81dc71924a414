import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SEP, SeriesFamily } from './series.js';

function family(): SeriesFamily {
  return new SeriesFamily({ name: 'f', help: 'h', type: 'counter', labelNames: ['direction', 'podname'], fixedLabels: 1, maxSeries: 1000 });
}
const names = (f: SeriesFamily): string[] => f.get().values.map((v) => `${v.labels['direction']}/${v.labels['podname']}`).sort();

describe('SeriesFamily: removal in steps', () => {
  it('removes matching tails in steps while flows add series and TTL expires others in between', () => {
    const f = family();
    for (let i = 0; i < 10; i++) for (const d of ['in', 'out']) f.add(d, SEP + `p${i}`, 1, i < 5 ? 0 : 100);
    const job = f.removeTailsInSteps((tail) => tail.endsWith('gone'), 3);
    assert.equal(job.next().done, false);
    f.add('in', SEP + 'x-gone', 1, 100); // a flow creates a matching series after the walk began
    f.add('in', SEP + 'y', 1, 100);
    assert.equal(f.expire(50), 10, 'p0..p4 expire between two steps');
    f.add('in', SEP + 'p0', 1, 100); // and come back, reusing freed indexes
    let r = job.next();
    while (!r.done) r = job.next();
    assert.equal(r.value, 1, 'the matching series added meanwhile is removed too');
    assert.deepEqual(names(f), ['in/p0', 'in/p5', 'in/p6', 'in/p7', 'in/p8', 'in/p9', 'in/y', 'out/p5', 'out/p6', 'out/p7', 'out/p8', 'out/p9']);
    assert.equal(f.size, 12, 'no index released twice');
    f.add('out', SEP + 'z', 1, 100);
    f.add('out', SEP + 'w', 1, 100);
    assert.equal(f.size, 14);
    assert.equal(new Set(['z', 'w', 'p5'].map((p) => f.index('out', SEP + p, 100))).size, 3, 'distinct slots after the reuse');
  });

  it('asks about each distinct tail once', () => {
    const f = family();
    for (let i = 0; i < 4; i++) for (const d of ['in', 'out', 'unknown']) f.add(d, SEP + `p${i}`, 1, 0);
    const asked: string[] = [];
    assert.equal(f.removeTails((tail) => (asked.push(tail), tail === SEP + 'p1')), 3);
    assert.equal(asked.length, 4);
    assert.equal(f.size, 9);
  });
});
