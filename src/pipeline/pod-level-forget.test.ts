import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakePodWatch } from '../../test/fakes/informer.js';
import { IpCache, type PodEndpoint } from '../cache/index.js';
import { cacheLookup, createEnricher } from '../enricher/index.js';
import { createFlow } from '../flow/index.js';
import { silentLogger } from '../log/index.js';
import { createMetricsRegistry } from '../metrics/index.js';
import { createMetricsModule, type GonePods } from '../metrics/module/index.js';
import { startPodForgetter, stillGone } from './pod-level-forget.js';
import { specOf } from '../../test/fakes/metrics-spec.js';

const pod = (namespace: string, name: string, ips: string[]): PodEndpoint => ({
  kind: 'pod', namespace, name, ips, nodeIP: undefined, labels: {}, annotations: {}, owners: [], workloads: [],
});

function setup(o: { batchMs?: number; graceMs?: number } = {}) {
  const { pods, cache, add, del } = fakePodWatch();
  const calls: GonePods[] = [];
  const module = {
    *forgetPodsInSteps(g: GonePods): Generator<void, number, void> {
      calls.push(g);
      return 0;
    },
  };
  const forgetter = startPodForgetter({ pods, cache, module, log: silentLogger, batchMs: o.batchMs ?? 10, graceMs: o.graceMs ?? 60 });
  return { calls, forgetter, add, del };
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const names = (g: GonePods | undefined): string[] => (g?.pods ?? []).map((p) => `${p.namespace}/${p.name}`).sort();

describe('pod-level: deleted pods\' series', () => {
  it('gathers deletes into one pass per batch, with names and IPs (IPv4 and IPv6) taken at delete time, and passes again after the grace', async () => {
    const t = setup();
    for (let i = 0; i < 100; i++) t.add(pod('a', `p${i}`, [`10.0.0.${i}`, `fd00::${i.toString(16)}`]));
    for (let i = 0; i < 100; i++) t.del('a', `p${i}`);
    assert.equal(t.calls.length, 0, 'nothing on the event path');
    await tick(30);
    assert.equal(t.calls.length, 1, 'one pass for the whole batch');
    assert.equal(t.calls[0]?.pods.length, 100);
    assert.equal(t.calls[0]?.names.length, 100);
    assert.equal(t.calls[0]?.ips.length, 200);
    assert.ok(t.calls[0]?.ips.includes('fd00::63') && t.calls[0]?.ips.includes('10.0.0.99'));
    await tick(100);
    assert.equal(t.calls.length, 2, 'the grace pass');
    assert.equal(t.calls[1]?.pods.length, 100);
    await tick(100);
    assert.equal(t.calls.length, 2, 'then nothing more');
    t.forgetter[Symbol.dispose]();
  });

  it('a delete while a grace pass waits is still removed after one batch', async () => {
    const t = setup({ graceMs: 5000 });
    t.add(pod('a', 'p', ['10.0.0.1']));
    t.del('a', 'p');
    await tick(30);
    assert.deepEqual(names(t.calls[0]), ['a/p']);
    t.add(pod('a', 'q', ['10.0.0.2']));
    t.del('a', 'q');
    await tick(30);
    assert.deepEqual(names(t.calls[1]), ['a/q'], 'not held back until the grace pass 5 s later');
    t.forgetter[Symbol.dispose]();
  });

  it('leaves out what a live pod holds again: a pod back under its name, a name alive in another namespace, an IP given to another pod', () => {
    const cache = new IpCache();
    cache.upsertPod(pod('a', 'web-0', ['10.0.0.9'])); // the StatefulSet pod came back, with a new IP
    cache.upsertPod(pod('b', 'api', ['10.0.0.2'])); // another pod now holds api's old IP, and its name in namespace b
    const g = stillGone([pod('a', 'web-0', ['10.0.0.1']), pod('a', 'api', ['10.0.0.2', 'fd00::2']), pod('a', 'gone', ['10.0.0.3'])], cache);
    assert.deepEqual(g.pods, [{ namespace: 'a', name: 'api' }, { namespace: 'a', name: 'gone' }]);
    assert.deepEqual(g.names, ['gone'], 'api lives on in namespace b');
    assert.deepEqual(g.ips, ['10.0.0.1', 'fd00::2', '10.0.0.3'], '10.0.0.2 is held by b/api');
  });

  it('with the real module: an IP re-assigned before the pass keeps the live pod\'s [ip] series, the dead pod\'s [podname] series go', async () => {
    const { pods, cache, add, del } = fakePodWatch();
    const metrics = createMetricsRegistry({ processMetrics: false });
    const module = createMetricsModule({ metrics, remoteContext: true, nodeName: 'node-1' });
    module.apply(specOf({ contextOptions: [{ metricName: 'forward_count', sourceLabels: ['ip'] }, { metricName: 'forward_bytes', sourceLabels: ['podname'] }], namespaces: { exclude: [] } }));
    const forgetter = startPodForgetter({ pods, cache, module, log: silentLogger, batchMs: 10, graceMs: 1000 });
    const flows = createEnricher(cacheLookup(cache), module);
    const send = (): void => flows.consume({ source: 't', flows: [createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.9', verdict: 'FORWARDED', proto: 6, packets: 1, bytes: 100, direction: 'EGRESS' })] });
    const body = async (): Promise<string> => (await metrics.expose()).body;
    add(pod('a', 'old', ['10.0.0.1']));
    send();
    del('a', 'old');
    add(pod('a', 'new', ['10.0.0.1'])); // the IP goes to a new pod before the batch's pass
    send();
    await tick(50);
    assert.match(await body(), /adv_forward_count\{direction="EGRESS",source_ip="10\.0\.0\.1"\} 2/, 'the live pod\'s IP series kept, count intact');
    assert.doesNotMatch(await body(), /source_podname="old"/);
    assert.match(await body(), /adv_forward_bytes\{direction="EGRESS",source_podname="new"\} 100/);
    del('a', 'new');
    await tick(50);
    assert.doesNotMatch(await body(), /10\.0\.0\.1|source_podname="new"/, 'once the IP is free its series go');
    forgetter[Symbol.dispose]();
    module[Symbol.dispose]();
  });

  it('looks at the cache when the pass runs, not when the delete came', async () => {
    const t = setup({ graceMs: 1000 });
    t.add(pod('a', 'web-0', ['10.0.0.1']));
    t.del('a', 'web-0');
    t.add(pod('a', 'web-0', ['10.0.0.1']));
    t.forgetter.flush();
    assert.deepEqual(names(t.calls[0]), []);
    assert.deepEqual(t.calls[0]?.ips, []);
    t.forgetter[Symbol.dispose]();
  });

  it('runs a pass in steps of stepSeries series, letting other tasks run in between', async () => {
    const { pods, cache, add, del } = fakePodWatch();
    const order: string[] = [];
    const module = {
      *forgetPodsInSteps(_g: GonePods, step: number): Generator<void, number, void> {
        assert.equal(step, 100);
        for (let i = 0; i < 3; i++) {
          order.push(`step ${i}`);
          setImmediate(() => order.push(`other ${i}`));
          yield;
        }
        return 0;
      },
    };
    const forgetter = startPodForgetter({ pods, cache, module, log: silentLogger, batchMs: 5, stepSeries: 100 });
    add(pod('a', 'p', ['10.0.0.1']));
    del('a', 'p');
    // Until the pass has run all its steps (under load, later than a fixed tick).
    for (let t = 0; t < 200 && order.length < 6; t++) await tick(10);
    assert.deepEqual(order, ['step 0', 'other 0', 'step 1', 'other 1', 'step 2', 'other 2']);
    forgetter[Symbol.dispose]();
  });

  it('does nothing after dispose', async () => {
    const t = setup();
    t.add(pod('a', 'p', ['10.0.0.1']));
    t.del('a', 'p');
    t.forgetter[Symbol.dispose]();
    t.add(pod('a', 'q', ['10.0.0.2']));
    t.del('a', 'q');
    await tick(100);
    assert.equal(t.calls.length, 0);
  });
});
