import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodEndpoint } from '../cache/index.js';
import { createInterestSet, type Informer, type InformerFactory, type InformerSpec, type KubeObject, type SlimMetricsConfiguration } from '../k8s/index.js';
import { annotationSpec, type MetricsModule, type MetricsSpec } from '../metrics/module/index.js';
import { captureLog } from '../../test/fakes/log.js';
import { FakeInformer, fakePodWatch } from '../../test/fakes/informer.js';
import { annotationSelection, selectionOf, startSpecController } from './pod-level-spec.js';

function fakeFactory(): InformerFactory & { byPlural: Map<string, FakeInformer<unknown>> } {
  const byPlural = new Map<string, FakeInformer<unknown>>();
  return {
    byPlural,
    informer<T extends KubeObject, S>(spec: InformerSpec<T, S>): Informer<S> {
      let i = byPlural.get(spec.resource.plural);
      if (!i) byPlural.set(spec.resource.plural, (i = new FakeInformer<unknown>()));
      return i as unknown as Informer<S>;
    },
    start: () => undefined,
    stats: () => [],
    [Symbol.asyncDispose]: async () => undefined,
  };
}

function fakeModule(): MetricsModule & { applied: (MetricsSpec | undefined)[] } {
  const applied: (MetricsSpec | undefined)[] = [];
  return {
    applied,
    consume: () => undefined,
    apply: (s) => void applied.push(s),
    forgetPods: () => 0,
    *forgetPodsInSteps() {
      return 0;
    },
    families: () => [],
    sweep: () => undefined,
    spec: () => applied[applied.length - 1],
    generation: () => applied.length,
    observe: () => undefined,
    observes: () => false,
    takeDeltas: () => [],
    merge: () => 0,
    [Symbol.dispose]: () => undefined,
  };
}


const pod = (namespace: string, name: string, ip: string, annotations: Record<string, string> = {}): PodEndpoint => ({
  kind: 'pod', namespace, name, ips: [ip], nodeIP: undefined, labels: {}, annotations, owners: [], workloads: [],
});

const mc = (name: string, state: SlimMetricsConfiguration['state'], spec: unknown): SlimMetricsConfiguration => ({
  name, created: '2026-01-01T00:00:00Z', generation: 1, state, spec: spec as never, acceptedSpec: spec as never,
});

const SPEC = { contextOptions: [{ metricName: 'drop_count', sourceLabels: ['podname'] }], namespaces: { include: ['a'] } };

function setup(annotations: boolean) {
  const factory = fakeFactory();
  const { pods, cache, add: addPod, del: delPod } = fakePodWatch();
  const module = fakeModule();
  const interest = createInterestSet({ cache, bypass: false, coalesceMs: 1 });
  const log = captureLog();
  const ctl = startSpecController({ annotations, remoteContext: true, factory, pods, cache, module, interest, log, debounceMs: 5 });
  return { factory, pods, cache, module, interest, log, ctl, addPod, delPod };
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('pod-level spec controller', () => {
  it('applies only the Accepted MetricsConfiguration, keeps the previous spec when one does not parse, and turns off when none is Accepted', async () => {
    const t = setup(false);
    const mcs = t.factory.byPlural.get('metricsconfigurations') as FakeInformer<SlimMetricsConfiguration>;
    assert.ok(mcs, 'watches MetricsConfigurations');
    assert.equal(t.factory.byPlural.has('namespaces'), false, 'no namespace watch outside annotation mode');
    mcs.set('m', mc('m', 'Initialized', SPEC));
    t.ctl.reconcile();
    assert.equal(t.module.applied.length, 0, 'not Accepted yet: nothing applied (the module starts with no spec)');
    mcs.set('m', mc('m', 'Accepted', SPEC));
    mcs.set('m', mc('m', 'Accepted', { ...SPEC, namespaces: { include: ['a', 'b'] } }));
    await tick(30);
    assert.equal(t.module.applied.length, 1, 'two changes inside the debounce window: one apply');
    assert.deepEqual(t.module.applied[0]?.namespaces, { include: ['a', 'b'] });
    assert.deepEqual(t.interest.selection(), { kind: 'include', namespaces: ['a', 'b'] });
    assert.ok(t.log.lines.some((l) => l.msg === 'advanced metrics spec applied' && l.fields?.['source'] === 'MetricsConfiguration m'));

    mcs.set('m', mc('m', 'Accepted', { contextOptions: [{ metricName: 'drop_count', ttl: '-5m' }], namespaces: { include: ['a'] } }));
    t.ctl.reconcile();
    assert.equal(t.module.applied.length, 1, 'a spec that does not validate changes nothing');
    const err = t.log.lines.find((l) => l.level === 'error');
    assert.equal(err?.fields?.['field'], 'spec.contextOptions[0].ttl');

    // Retina's documented example (docs/05-Concepts/CRDs/MetricsConfiguration.md) is applied; what it
    // asks for that has no effect (`additionalLabels: [direction]`) is logged once, naming the field.
    const doc = { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['ip', 'podname', 'port'], additionalLabels: ['direction'] }], namespaces: { include: ['default', 'kube-system'] } };
    mcs.set('m', mc('m', 'Accepted', doc));
    t.ctl.reconcile();
    t.ctl.reconcile();
    assert.equal(t.module.applied.length, 2);
    assert.deepEqual(t.module.applied[1]?.contextOptions[0]?.sourceLabels, ['ip', 'podname', 'port']);
    const warns = t.log.lines.filter((l) => l.level === 'warn');
    assert.equal(warns.length, 1, 'warned once per spec');
    assert.match(String(warns[0]?.fields?.['ignored']), /spec\.contextOptions\[0\]\.additionalLabels\[0\]: "direction" has no effect/);

    mcs.del('m');
    t.ctl.reconcile();
    assert.deepEqual(t.module.applied.at(-1), undefined);
    assert.equal(t.module.applied.length, 3);
    assert.deepEqual(t.interest.selection(), { kind: 'none' });
    t.ctl[Symbol.dispose]();
    t.interest[Symbol.dispose]();
  });

  it('annotation mode: annotated namespaces plus the namespaces of annotated pods; MetricsConfigurations are not watched', async () => {
    const t = setup(true);
    assert.equal(t.factory.byPlural.has('metricsconfigurations'), false);
    const nss = t.factory.byPlural.get('namespaces') as FakeInformer<string>;
    nss.set('x', 'x');
    t.addPod(pod('y', 'p', '10.0.0.2', { 'retina.sh': 'observe' }));
    t.addPod(pod('z', 'q', '10.0.0.3', { 'retina.sh': 'no' }));
    await tick(30);
    assert.deepEqual(t.module.applied.at(-1), annotationSpec(['x', 'y']));
    assert.deepEqual(t.interest.selection(), { kind: 'annotations', namespaces: ['x'] });
    t.interest.flush();
    assert.deepEqual([...t.interest.ips()], ['10.0.0.2']);
    t.ctl[Symbol.dispose]();
    t.interest[Symbol.dispose]();
  });

  it('maps specs to selections', () => {
    assert.deepEqual(selectionOf(undefined), { kind: 'none' });
    assert.deepEqual(selectionOf({ contextOptions: [], namespaces: undefined }), { kind: 'all' });
    assert.deepEqual(selectionOf({ contextOptions: [], namespaces: { exclude: ['k'] } }), { kind: 'exclude', namespaces: ['k'] });
    assert.deepEqual(annotationSelection(['b', 'a', 'a'], []).spec, annotationSpec(['a', 'b']));
  });
});
