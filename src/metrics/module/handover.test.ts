/**
 * Hand-over by index (handover.ts): the main thread's family ends with the worker's counts, also
 * when the main family removed series in between (its mapping is found again) and when the worker
 * reused an index for other labels (announced again).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SEP, SeriesFamily } from '../series.js';
import { DeltaMerger, DeltaTaker } from './handover.js';

const family = (): SeriesFamily => new SeriesFamily({ name: 'f', help: 'h', type: 'counter', labelNames: ['d', 'pod'], fixedLabels: 1, maxSeries: 100 });
const series = (f: SeriesFamily): string => f.exposition().split('\n').filter((l) => !l.startsWith('#')).sort().join('\n');

test('counts move by index; main-side removals and worker-side index reuse are followed', () => {
  const worker = family();
  const main = family();
  const taker = new DeltaTaker();
  const merger = new DeltaMerger();
  const move = (): number => {
    const d = taker.take(worker, 0);
    return d ? merger.merge(main, d) : 0;
  };
  worker.add('in', `${SEP}a`, 2, 1000);
  worker.add('in', `${SEP}b`, 3, 1000);
  assert.equal(move(), 2);
  assert.equal(move(), 0, 'nothing new: nothing sent');
  worker.add('in', `${SEP}a`, 5, 2000);
  const d = taker.take(worker, 0);
  assert.deepEqual(d?.announced.index, [], 'a known series crosses as its index only');
  merger.merge(main, d!);
  assert.equal(series(main), 'f{d="in",pod="a"} 7\nf{d="in",pod="b"} 3');
  assert.equal(main.touched[main.index('in', `${SEP}a`, 0)], 2000);
  main.expire(1500); // TTL on the main thread: b goes, indexes may be reused
  main.add('out', `${SEP}z`, 1, 3000);
  worker.add('in', `${SEP}b`, 1, 3000);
  worker.add('in', `${SEP}a`, 1, 3000);
  move();
  assert.equal(series(main), 'f{d="in",pod="a"} 8\nf{d="in",pod="b"} 1\nf{d="out",pod="z"} 1');
  worker.expire(3500); // the worker drops its idle series; a new one takes a freed index
  worker.add('in', `${SEP}c`, 4, 4000);
  const again = taker.take(worker, 0);
  assert.deepEqual(again?.announced.tail, [`${SEP}c`]);
  merger.merge(main, again!);
  assert.equal(series(main), 'f{d="in",pod="a"} 8\nf{d="in",pod="b"} 1\nf{d="in",pod="c"} 4\nf{d="out",pod="z"} 1');
});
