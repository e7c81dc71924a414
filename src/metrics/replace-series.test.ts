import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Gauge, Registry } from './prom.js';
import { replaceSeries, replaceSeriesWrites } from './registry.js';

function gauge(): { g: Gauge<'s'>; r: Registry } {
  const r = new Registry();
  return { g: new Gauge({ name: 'rt_replace', help: 'h', labelNames: ['s'], registers: [r] }), r };
}

/** Counts the gauge's own set() calls (prom-client's label hashing happens in there). */
function countSets(g: Gauge<'s'>): { n: number } {
  const calls = { n: 0 };
  const set = g.set.bind(g);
  g.set = ((...a: Parameters<typeof set>) => {
    calls.n++;
    return set(...a);
  }) as typeof g.set;
  return calls;
}

describe('replaceSeries', () => {
  it('calls prom-client only for the values that changed, and they reach the exposition', async () => {
    const { g, r } = gauge();
    const calls = countSets(g);
    replaceSeries(g, [[{ s: 'a' }, 1], [{ s: 'b' }, 2], [{ s: 'c' }, 3]]);
    assert.equal(calls.n, 3);
    const w0 = replaceSeriesWrites.n;
    replaceSeries(g, [[{ s: 'a' }, 1], [{ s: 'b' }, 2], [{ s: 'c' }, 3]]);
    assert.equal(calls.n, 3, 'an unchanged reading costs no prom-client call');
    assert.equal(replaceSeriesWrites.n, w0);
    replaceSeries(g, [[{ s: 'a' }, 1], [{ s: 'b' }, 5], [{ s: 'c' }, 3]]);
    assert.equal(calls.n, 4, 'one changed value, one call');
    assert.match(await r.metrics(), /^rt_replace\{s="a"\} 1\nrt_replace\{s="b"\} 5\nrt_replace\{s="c"\} 3$/m);
  });

  it('rebuilds in the rows order when the label sets change: gone series disappear, new ones appear', async () => {
    const { g, r } = gauge();
    replaceSeries(g, [[{ s: 'a' }, 1], [{ s: 'b' }, 2]]);
    replaceSeries(g, [[{ s: 'c' }, 3], [{ s: 'a' }, 1]]);
    const text = await r.metrics();
    assert.doesNotMatch(text, /s="b"/);
    assert.match(text, /^rt_replace\{s="c"\} 3\nrt_replace\{s="a"\} 1$/m);
    replaceSeries(g, [[{ s: 'c' }, 3]]);
    assert.doesNotMatch(await r.metrics(), /s="a"/);
  });

  it('writes everything again after the gauge was reset (a stopped plugin, restarted)', async () => {
    const { g, r } = gauge();
    replaceSeries(g, [[{ s: 'a' }, 1]]);
    g.reset();
    assert.doesNotMatch(await r.metrics(), /s="a"/);
    replaceSeries(g, [[{ s: 'a' }, 1]]);
    assert.match(await r.metrics(), /^rt_replace\{s="a"\} 1$/m);
  });

  it('gives the exposition a rebuild every time gives, over a sequence of readings', async () => {
    const a = gauge();
    const b = gauge();
    const readings: [{ s: string }, number][][] = [
      [[{ s: 'x' }, 1], [{ s: 'y' }, 2]],
      [[{ s: 'x' }, 1], [{ s: 'y' }, 3]],
      [[{ s: 'x' }, NaN], [{ s: 'y' }, 3]],
      [[{ s: 'x' }, NaN], [{ s: 'y' }, 3], [{ s: 'z' }, 0]],
      [[{ s: 'y' }, 3], [{ s: 'z' }, -0]],
    ];
    for (const rows of readings) {
      replaceSeries(a.g, rows);
      b.g.reset();
      for (const [l, v] of rows) b.g.set(l, v);
      assert.equal(await a.r.metrics(), await b.r.metrics());
    }
  });
});
