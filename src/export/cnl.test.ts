/**
 * The ContainerNetworkLog selection: ACNS's include filters as Hubble FlowFilters, judged by the
 * Observer's own filter compiler over our flows in Hubble's shape; resources combine as a union,
 * invalid ones are skipped with a log line naming the field, and nothing is selected without one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow, type Endpoint, type Flow } from '../flow/index.js';
import { compileFlowFilters, loadFlowEnums, toHubbleFlow } from '../flow/hubble/index.js';
import type { InformerFactory, ReflectorHandler } from '../k8s/index.js';
import { captureLog } from '../../test/fakes/log.js';
import { FakeInformer } from '../../test/fakes/informer.js';
import { createContainerNetworkLogSelection, includeFilterToFlowFilter, selectResource, selectorString, specToFlowFilters } from './cnl.js';
import type { SelectionFilters } from './types.js';

const ENUMS = loadFlowEnums(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));


const ep = (namespace: string, podName: string, labels: Record<string, string> = {}): Endpoint => ({
  namespace, podName, workloadKind: '', workloadName: '', service: '', nodeName: '', zone: '', labels,
});
const frontend = ep('shop', 'frontend-7d9c-abcde', { app: 'frontend', environment: 'production' });
const backend = ep('shop', 'backend-55f-xyz12', { app: 'backend', tier: 'prod' });
const other = ep('lab', 'backend-1', { app: 'backend', tier: 'dev' });

const tcp = (src: Endpoint | undefined, dst: Endpoint | undefined, over: Partial<Flow> = {}): Flow =>
  createFlow({ srcIp: '10.1.0.5', dstIp: '10.2.0.7', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 8080, source: src, destination: dst, ...over });

/** Whether `filters` (a selection's allow list) select the flow, by the Observer's compiler. */
const selects = (s: SelectionFilters, f: Flow): boolean => s.active && compileFlowFilters(s.allow, s.deny, ENUMS).match(toHubbleFlow(f, 'node-a'));
const matches = (spec: unknown, f: Flow): boolean => {
  const r = selectResource('t', spec, ENUMS);
  assert.ok(r.ok, JSON.stringify(r));
  return compileFlowFilters(r.filters, undefined, ENUMS).match(toHubbleFlow(f, 'node-a'));
};

describe('ContainerNetworkLog include filters as Hubble FlowFilters', () => {
  it("ACNS's template: one FlowFilter, every field mapped", () => {
    assert.deepEqual(includeFilterToFlowFilter({
      name: 'sample-filter',
      from: {
        namespacedPod: ['sample-namespace/sample-pod'],
        labelSelector: { matchLabels: { app: 'frontend', 'k8s.io/namespace': 'sample-namespace' }, matchExpressions: [{ key: 'environment', operator: 'In', values: ['production', 'staging'] }] },
        ip: ['192.168.1.10', '10.0.0.1'],
      },
      to: {
        namespacedPod: ['sample-namespace2/sample-pod2'],
        labelSelector: { matchLabels: { app: 'backend', 'k8s.io/namespace': 'sample-namespace2' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['dev'] }] },
        ip: ['192.168.1.20', '10.0.1.1'],
      },
      protocol: ['tcp', 'udp', 'dns'],
      verdict: ['forwarded', 'dropped'],
    }), {
      source_pod: ['sample-namespace/sample-pod'],
      source_label: ['k8s:app=frontend,k8s:environment in (production,staging)'],
      source_ip: ['192.168.1.10', '10.0.0.1'],
      destination_pod: ['sample-namespace2/sample-pod2'],
      destination_label: ['k8s:app=backend,k8s:tier notin (dev)'],
      destination_ip: ['192.168.1.20', '10.0.1.1'],
      protocol: ['tcp', 'udp', 'dns'],
      verdict: ['FORWARDED', 'DROPPED'],
    });
    assert.deepEqual(specToFlowFilters({ includefilters: [{}, { name: 'x', from: { labelSelector: {} } }] }), [{}, {}]);
    assert.equal(selectorString({ matchExpressions: [{ key: 'a', operator: 'Exists' }, { key: 'b', operator: 'DoesNotExist' }] }), 'k8s:a,!k8s:b');
    // The namespace key: equality and In become pod filters (intersected with namespacedPod); other operators stay labels.
    assert.deepEqual(includeFilterToFlowFilter({ to: { labelSelector: { matchLabels: { 'k8s.io/namespace': 'a' }, matchExpressions: [{ key: 'k8s.io/namespace', operator: 'In', values: ['a', 'b'] }] } } }), { destination_pod: ['a/'] });
    assert.deepEqual(includeFilterToFlowFilter({ to: { namespacedPod: ['a/x', 'b/y'], labelSelector: { matchExpressions: [{ key: 'k8s.io/namespace', operator: 'In', values: ['b', 'c'] }] } } }), { destination_pod: ['b/y'] });
    assert.deepEqual(includeFilterToFlowFilter({ to: { namespacedPod: ['a/x'], labelSelector: { matchLabels: { 'k8s.io/namespace': 'b' } } } }), { destination_pod: ['a/x'], destination_label: ['k8s:io.kubernetes.pod.namespace=b'] }, 'disagreeing: the label form, matching nothing');
    assert.deepEqual(includeFilterToFlowFilter({ from: { labelSelector: { matchExpressions: [{ key: 'k8s.io/namespace', operator: 'NotIn', values: ['kube-system'] }] } } }), { source_label: ['k8s:io.kubernetes.pod.namespace notin (kube-system)'] });
  });

  it('namespacedPod: namespace equal and pod-name prefix; namespace/ alone is the whole namespace', () => {
    const spec = { includefilters: [{ from: { namespacedPod: ['shop/frontend-'] } }] };
    assert.equal(matches(spec, tcp(frontend, backend)), true);
    assert.equal(matches(spec, tcp(backend, frontend)), false);
    assert.equal(matches(spec, tcp(undefined, frontend)), false);
    const ns = { includefilters: [{ to: { namespacedPod: ['shop/'] } }] };
    assert.equal(matches(ns, tcp(other, backend)), true);
    assert.equal(matches(ns, tcp(backend, other)), false);
  });

  it('labelSelector: matchLabels AND matchExpressions over pod labels; k8s.io/namespace is the pod namespace', () => {
    const spec = { includefilters: [{ to: { labelSelector: { matchLabels: { app: 'backend', 'k8s.io/namespace': 'shop' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['dev'] }] } } }] };
    assert.equal(matches(spec, tcp(frontend, backend)), true);
    assert.equal(matches(spec, tcp(frontend, other)), false, 'other namespace (and tier dev)');
    assert.equal(matches({ includefilters: [{ to: { labelSelector: { matchLabels: { 'k8s.io/namespace': 'lab' } } } }] }, tcp(frontend, other)), true);
    assert.equal(matches({ includefilters: [{ to: { labelSelector: { matchExpressions: [{ key: 'k8s.io/namespace', operator: 'In', values: ['lab', 'x'] }] } } }] }, tcp(frontend, backend)), false);
    assert.equal(matches({ includefilters: [{ from: { labelSelector: { matchExpressions: [{ key: 'environment', operator: 'Exists' }] } } }] }, tcp(frontend, backend)), true);
    assert.equal(matches({ includefilters: [{ to: { labelSelector: { matchExpressions: [{ key: 'k8s.io/namespace', operator: 'NotIn', values: ['shop'] }] } } }] }, tcp(frontend, other)), true);
    assert.equal(matches({ includefilters: [{ to: { labelSelector: { matchExpressions: [{ key: 'k8s.io/namespace', operator: 'NotIn', values: ['lab'] }] } } }] }, tcp(frontend, other)), false);
    assert.equal(matches({ includefilters: [{ to: { namespacedPod: ['shop/backend-'], labelSelector: { matchLabels: { 'k8s.io/namespace': 'lab' } } } }] }, tcp(frontend, backend)), false, 'disagreeing namespaces match nothing');
    assert.equal(matches({ includefilters: [{ to: { namespacedPod: ['shop/backend-'], labelSelector: { matchLabels: { 'k8s.io/namespace': 'lab' } } } }] }, tcp(frontend, other)), false);
    assert.equal(matches({ includefilters: [{ from: { labelSelector: { matchExpressions: [{ key: 'environment', operator: 'DoesNotExist' }] } } }] }, tcp(frontend, backend)), false);
  });

  it('ip: addresses and CIDRs on each side; protocol tcp/udp/dns; verdict; fields AND, lists OR, filters OR', () => {
    assert.equal(matches({ includefilters: [{ from: { ip: ['10.1.0.0/16'] }, to: { ip: ['10.2.0.7'] } }] }, tcp(undefined, undefined)), true);
    assert.equal(matches({ includefilters: [{ from: { ip: ['10.2.0.7'] } }] }, tcp(undefined, undefined)), false);
    const udp = tcp(undefined, undefined, { proto: 17 });
    const dns = createFlow({ srcIp: '10.1.0.5', dstIp: '10.0.0.10', verdict: 'DNS', proto: 17, srcPort: 5353, dstPort: 53, dns: { query: 'example.com', qtype: 'A', rcode: 'NOERROR', answers: [], isResponse: false, numAnswers: 0 } });
    const dropped = tcp(undefined, undefined, { verdict: 'DROPPED', dropReason: 'POLICY_DENIED' });
    assert.equal(matches({ includefilters: [{ protocol: ['tcp'] }] }, udp), false);
    assert.equal(matches({ includefilters: [{ protocol: ['tcp', 'udp'] }] }, udp), true);
    assert.equal(matches({ includefilters: [{ protocol: ['dns'] }] }, dns), true);
    assert.equal(matches({ includefilters: [{ protocol: ['dns'] }] }, udp), false);
    assert.equal(matches({ includefilters: [{ verdict: ['dropped'] }] }, dropped), true);
    assert.equal(matches({ includefilters: [{ verdict: ['dropped'] }] }, tcp(undefined, undefined)), false);
    assert.equal(matches({ includefilters: [{ verdict: ['forwarded'] }] }, dns), true);
    // AND across fields of one filter, OR across filters.
    assert.equal(matches({ includefilters: [{ protocol: ['udp'], verdict: ['dropped'] }] }, dropped), false);
    assert.equal(matches({ includefilters: [{ protocol: ['udp'] }, { verdict: ['dropped'] }] }, dropped), true);
    assert.equal(matches({ includefilters: [{}] }, udp), true, 'an empty filter selects everything');
  });

  it('an invalid resource is refused with the field path', () => {
    const r = selectResource('bad', { includefilters: [{}, { from: { ip: ['10.0.0.300'] } }] }, ENUMS);
    assert.deepEqual(r, { name: 'bad', ok: false, problems: ['spec.includefilters[1].from.ip[0]: "10.0.0.300" is not an IP or CIDR'] });
  });
});

/** A factory whose one informer is a FakeInformer (unit test only; the integration test runs the real one). */
function fakeFactory(): { factory: InformerFactory; informer: FakeInformer<unknown>; synced(): void; started: number } {
  const informer = new FakeInformer<unknown>();
  const out = {
    informer,
    started: 0,
    synced: () => informer.handlers.forEach((h: ReflectorHandler<unknown>) => h.synced?.()),
    factory: {
      informer: () => informer,
      start: () => void out.started++,
      stats: () => [],
      [Symbol.asyncDispose]: async () => undefined,
    } as unknown as InformerFactory,
  };
  return out;
}

const cnl = (name: string, spec: unknown, generation = 1): unknown => ({ name, generation, spec });

describe('createContainerNetworkLogSelection', () => {
  it('nothing is selected until a valid resource exists; resources combine as a union; deletes shrink it', () => {
    const log = captureLog();
    const sel = createContainerNetworkLogSelection({ log, enums: ENUMS });
    let changes = 0;
    sel.onChange(() => changes++);
    assert.equal(sel.current().active, false);
    const f = fakeFactory();
    f.informer.items.set('a', cnl('a', { includefilters: [{ from: { namespacedPod: ['shop/frontend-'] } }] }));
    sel.watch(f.factory);
    assert.equal(f.started, 1);
    assert.equal(sel.current().active, false, 'not before the first list is complete');
    f.synced();
    assert.equal(changes, 1, 'the first list is one change');
    assert.equal(sel.current().active, true);
    assert.equal(selects(sel.current(), tcp(frontend, backend)), true);
    assert.equal(selects(sel.current(), tcp(backend, frontend)), false);

    f.informer.set('b', cnl('b', { includefilters: [{ verdict: ['dropped'] }] }));
    assert.equal(changes, 2);
    assert.equal(selects(sel.current(), tcp(backend, frontend, { verdict: 'DROPPED' })), true, 'b selects drops');
    assert.equal(selects(sel.current(), tcp(frontend, backend)), true, 'a still selects');

    // An invalid update of b: skipped whole with a log line naming the field; a stays in force.
    f.informer.set('b', cnl('b', { includefilters: [{ verdict: ['dropped'], to: { ip: ['10.0.0.300'] } }] }, 2));
    assert.equal(changes, 3);
    assert.equal(selects(sel.current(), tcp(backend, frontend, { verdict: 'DROPPED' })), false);
    const warn = log.lines.find((l) => l.level === 'warn' && l.msg === 'ContainerNetworkLog skipped: invalid');
    assert.equal(warn?.fields?.['name'], 'b');
    assert.equal(warn?.fields?.['field'], 'spec.includefilters[0].to.ip[0]: "10.0.0.300" is not an IP or CIDR');
    assert.deepEqual(sel.resources().map((r) => [r.name, r.ok]), [['a', true], ['b', false]]);

    // Not a spec at all (a CR written before the CRD's schema): skipped, never thrown.
    f.informer.set('c', cnl('c', 'garbage'));
    assert.equal(changes, 3, 'nothing in force changed');
    f.informer.del('a');
    assert.equal(sel.current().active, false, 'no valid resource left: nothing is written');
    assert.equal(changes, 4);
    f.informer.set('b', cnl('b', { includefilters: [{ verdict: ['dropped'] }] }, 3));
    assert.equal(sel.current().active, true);
    sel[Symbol.dispose]();
    f.informer.del('b');
    assert.equal(changes, 5, 'no change is heard after dispose');
  });
});
