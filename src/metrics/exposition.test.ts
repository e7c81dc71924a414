import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as c from './catalog.js';
import { Body, formatExposition } from './exposition.js';
import { createMetricsRegistry } from './registry.js';
import { SeriesFamily } from './series.js';

describe('exposition', () => {
  it('is byte-for-byte what prom-client writes, escapes included', async () => {
    // Process metrics change between two reads, so they are compared by name only (below).
    const m = createMetricsRegistry({ processMetrics: false });
    m.gauge(c.interfaceStats).set({ interface_name: 'eth0', statistic_name: 'rx_bytes' }, 12345678901);
    m.gauge(c.interfaceStats).set({ interface_name: 'we"ird\\na\nme', statistic_name: 'rx_dropped' }, 0.5);
    m.gauge(c.tcpState).set({ state: 'ESTABLISHED' }, Number.NaN);
    m.gauge(c.tcpState).set({ state: 'LISTEN' }, Number.POSITIVE_INFINITY);
    m.counter(c.dnsRequestCount).inc(3);
    m.counter(c.lostEventsCounter).inc({ type: 'kernel', reason: 'dns' }, 2);
    m.histogram({ name: 'x_latency', type: 'histogram', help: 'help with \\ and\nnewline', labels: ['a'], buckets: [0.5, 1.5] }).observe({ a: 'b' }, 1);
    const fam = new SeriesFamily({ name: 'networkobservability_adv_forward_count', help: 'h', type: 'gauge', labelNames: ['direction', 'source_podname'], fixedLabels: 1, maxSeries: 10 });
    fam.add('EGRESS', '\x1fweb', 3, 0);
    m.attach(fam);
    const ours = await formatExposition(m.registry);
    const theirs = await m.registry.metrics();
    assert.equal(ours, theirs);
    assert.match(ours, /interface_name="we\\"ird\\\\na\\nme"/);
  });

  it('process_start_time_seconds: this process\'s start, read when the registry is made (prom-client reads it when its module loads: in a start-up snapshot, the build\'s)', async () => {
    const body = (await createMetricsRegistry().expose()).body;
    const start = Number(/^process_start_time_seconds (\d+)$/m.exec(body)?.[1]);
    assert.ok(Math.abs(start - (Date.now() / 1000 - process.uptime())) <= 1, `${start}`);
    assert.equal(body.match(/^# TYPE process_start_time_seconds gauge$/gm)?.length, 1, 'one family');
  });

  it('serves process metrics, without the _total gauges promtool rejects', async () => {
    const body = (await createMetricsRegistry().expose()).body;
    assert.match(body, /^process_resident_memory_bytes \d+/m);
    assert.match(body, /^nodejs_active_handles\{/m);
    assert.doesNotMatch(body, /nodejs_active_handles_total/);
  });
});

describe('SeriesFamily exposition', () => {
  it('is what prom-client writes from its values, through changes, removals and reused indexes', async () => {
    const m = createMetricsRegistry({ processMetrics: false });
    const fam = new SeriesFamily({ name: 'networkobservability_adv_drop_count', help: 'a \\ help', type: 'counter', labelNames: ['reason', 'direction', 'podname'], fixedLabels: 2, maxSeries: 4 });
    m.attach(fam);
    const same = async (): Promise<void> => assert.equal(await formatExposition(m.registry), await m.registry.metrics());
    fam.add('drop\x1fEGRESS', '\x1fweb-0', 1, 0);
    fam.add('drop\x1fINGRESS', '\x1fw"e\\b\nx', 2.5, 0);
    await same();
    fam.add('drop\x1fEGRESS', '\x1fweb-0', 4, 10);
    await same();
    assert.match(await formatExposition(m.registry), /^networkobservability_adv_drop_count\{reason="drop",direction="EGRESS",podname="web-0"\} 5$/m);
    fam.removeTails((t) => t === '\x1fweb-0');
    fam.add('drop\x1fEGRESS', '\x1fweb-1', 7, 20); // takes the freed index: its line is made afresh
    await same();
    assert.doesNotMatch(await formatExposition(m.registry), /web-0/);
    for (let i = 0; i < 6; i++) fam.add('drop\x1fEGRESS', `\x1fp${i}`, 1, 30); // past maxSeries: the overflow series
    await same();
  });
});

describe('exposition body', () => {
  it('holds the UTF-8 of every piece in order, across growth, flushes and reuse', () => {
    const b = new Body(16);
    const pieces = Array.from({ length: 5000 }, (_, i) => `l${i} é€😀 ${'x'.repeat(i % 40)}\n`);
    for (const p of pieces) b.push(p);
    assert.ok(b.bytes().equals(Buffer.from(pieces.join(''), 'utf8')));
    assert.ok(b.capacity >= b.bytes().length);
    b.reset();
    b.push('small ü\n');
    assert.equal(b.bytes().toString('utf8'), 'small ü\n');
    // A body far smaller than the buffer gives memory back over the next resets.
    const big = b.capacity;
    b.reset();
    assert.ok(b.capacity < big, `${b.capacity} < ${big}`);
  });

  it('exposeBody is the same text as expose, and reuses its buffer only once released', async () => {
    const m = createMetricsRegistry({ processMetrics: false });
    const fam = new SeriesFamily({ name: 'networkobservability_adv_forward_count', help: 'h', type: 'counter', labelNames: ['direction', 'source_podname'], fixedLabels: 1, maxSeries: 100 });
    for (let i = 0; i < 50; i++) fam.add('EGRESS', `\x1fpod-ü-${i}`, i, 0);
    m.attach(fam);
    const text = (await m.expose()).body;
    const a = await m.exposeBody();
    assert.equal(Buffer.from(a.body).toString('utf8'), text);
    const b = await m.exposeBody(); // a not released: its bytes must stay as they are
    assert.notEqual(b.body.buffer, a.body.buffer);
    assert.equal(Buffer.from(a.body).toString('utf8'), text);
    a.release();
    const c = await m.exposeBody();
    assert.equal(c.body.buffer, a.body.buffer);
    assert.equal(Buffer.from(c.body).toString('utf8'), text);
  });
});
