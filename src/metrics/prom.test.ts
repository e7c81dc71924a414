import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import * as promIndex from 'prom-client';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from './prom.js';

test("prom.ts gives prom-client's own classes (the ones its index exports)", () => {
  assert.equal(Registry, promIndex.Registry);
  assert.equal(Counter, promIndex.Counter);
  assert.equal(Gauge, promIndex.Gauge);
  assert.equal(Histogram, promIndex.Histogram);
  assert.equal(collectDefaultMetrics, promIndex.collectDefaultMetrics);
});

test('metrics made through prom.ts register and expose as prom-client documents', async () => {
  const r = new Registry();
  new Counter({ name: 'rt_test_total', help: 'h', labelNames: ['a'], registers: [r] }).inc({ a: 'x' }, 2);
  new Gauge({ name: 'rt_test_gauge', help: 'h', registers: [r] }).set(3);
  new Histogram({ name: 'rt_test_seconds', help: 'h', buckets: [1], registers: [r] }).observe(0.5);
  const text = await r.metrics();
  assert.match(text, /^rt_test_total\{a="x"\} 2$/m);
  assert.match(text, /^rt_test_gauge 3$/m);
  assert.match(text, /^rt_test_seconds_bucket\{le="1"\} 1$/m);
});

test("loading prom.ts loads neither prom-client's Pushgateway nor its cluster aggregator (node:https, node:zlib, node:cluster)", () => {
  const url = new URL('./prom.js', import.meta.url).href;
  const script = `await import(${JSON.stringify(url)});
    console.log(JSON.stringify(process.moduleLoadList.filter((m) => /^NativeModule (https|zlib|cluster)$/.test(m))));`;
  const loaded = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
  assert.deepEqual(loaded, []);
});
