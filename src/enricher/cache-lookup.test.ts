import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IpCache, type PodEndpoint, type ServiceEndpoint } from '../cache/index.js';
import { createFlow, type FlowBatch } from '../flow/index.js';
import { cacheLookup, createEnricher, selectorMatches } from './index.js';

function pod(name: string, ips: string[], over: Partial<PodEndpoint> = {}): PodEndpoint {
  return {
    kind: 'pod', namespace: 'shop', name, ips, nodeIP: '192.168.0.1', labels: { app: 'web', tier: 'front' }, annotations: {},
    owners: [{ kind: 'ReplicaSet', name: 'web-5d4f8c9b7' }], workloads: [{ kind: 'Deployment', name: 'web' }], ...over,
  };
}
const svc = (name: string, ips: string[], selector: Record<string, string>, namespace = 'shop'): ServiceEndpoint => ({ kind: 'service', namespace, name, ips, selector });

function filled(): IpCache {
  const c = new IpCache();
  c.upsertNode({ kind: 'node', name: 'node-1', ips: ['192.168.0.1', 'fd00:ff::1'], zone: 'zone-a' });
  c.upsertNode({ kind: 'node', name: 'node-2', ips: ['192.168.0.2'], zone: undefined });
  c.upsertPod(pod('web-1', ['10.0.0.1', 'fd00::1']));
  c.upsertService(svc('web', ['10.96.0.10'], { app: 'web' }));
  c.upsertService(svc('db', ['10.96.0.11'], { app: 'db' }));
  return c;
}

describe('cacheLookup', () => {
  it('turns a pod IP into namespace, pod, resolved workload, service, node, zone and labels', () => {
    const l = cacheLookup(filled());
    const e = l.byIp('10.0.0.1');
    assert.ok(e);
    assert.equal(e.namespace, 'shop');
    assert.equal(e.podName, 'web-1');
    assert.equal(e.workloadKind, 'Deployment');
    assert.equal(e.workloadName, 'web');
    assert.equal(e.service, 'web');
    assert.equal(e.nodeName, 'node-1');
    assert.equal(e.zone, 'zone-a');
    assert.deepEqual(e.labels, { app: 'web', tier: 'front' });
  });

  it('enriches IPv6 in any spelling, with the same Endpoint object as the pod\'s IPv4', () => {
    const l = cacheLookup(filled());
    assert.equal(l.byIp('FD00:0:0::1'), l.byIp('10.0.0.1'));
    assert.equal(l.byIp('fd00::1')?.podName, 'web-1');
  });

  it('turns a Service IP into namespace and service, a node IP into node and zone, anything else into nothing', () => {
    const l = cacheLookup(filled());
    assert.deepEqual({ ...l.byIp('10.96.0.11') }, { namespace: 'shop', podName: '', workloadKind: '', workloadName: '', service: 'db', nodeName: '', zone: '', labels: {} });
    assert.deepEqual({ ...l.byIp('fd00:ff::1') }, { namespace: '', podName: '', workloadKind: '', workloadName: '', service: '', nodeName: 'node-1', zone: 'zone-a', labels: {} });
    assert.equal(l.byIp('8.8.8.8'), undefined);
    assert.equal(l.byIp('8.8.8.8'), undefined);
  });

  it('leaves workload and service empty when there are none, and takes the pod\'s own node name first', () => {
    const c = filled();
    c.upsertPod(pod('job-x', ['10.0.0.5'], { workloads: [], labels: { run: 'x' }, nodeName: 'node-2', nodeIP: undefined }));
    const e = cacheLookup(c).byIp('10.0.0.5');
    assert.equal(e?.workloadKind, '');
    assert.equal(e?.workloadName, '');
    assert.equal(e?.service, '');
    assert.equal(e?.nodeName, 'node-2');
    assert.equal(e?.zone, '');
  });

  it('picks a Service of the pod\'s own namespace only, the first by name when several match', () => {
    const c = filled();
    c.upsertService(svc('aaa-other-ns', ['10.96.1.1'], { app: 'web' }, 'other'));
    c.upsertService(svc('a-web', ['10.96.1.2'], { tier: 'front' }));
    c.upsertService(svc('empty', ['10.96.1.3'], {}));
    assert.equal(cacheLookup(c).byIp('10.0.0.1')?.service, 'a-web');
  });

  it('returns one Endpoint object per cache entry, and a new one when the entry or the services change', () => {
    const c = filled();
    const l = cacheLookup(c);
    const first = l.byIp('10.0.0.1');
    c.upsertPod(pod('other', ['10.0.0.9']));
    assert.equal(l.byIp('10.0.0.1'), first, 'another pod changing keeps this one');
    c.upsertPod(pod('web-1', ['10.0.0.1'], { labels: { app: 'db' } }));
    const second = l.byIp('10.0.0.1');
    assert.notEqual(second, first);
    assert.equal(second?.service, 'db');
    assert.equal(l.byIp('fd00::1'), undefined, 'the pod gave up its IPv6 address');
    c.deleteService('shop', 'db');
    const third = l.byIp('10.0.0.1');
    assert.notEqual(third, second);
    assert.equal(third?.service, '');
    c.deletePod('shop', 'web-1');
    assert.equal(l.byIp('10.0.0.1'), undefined);
  });

  it('finds an address again after the memo filled up', () => {
    const l = cacheLookup(filled(), { maxRemembered: 2 });
    for (const ip of ['1.1.1.1', '1.1.1.2', '1.1.1.3']) assert.equal(l.byIp(ip), undefined);
    assert.equal(l.byIp('10.0.0.1')?.podName, 'web-1');
  });

  it('feeds the enricher, which fills both sides of each flow', () => {
    const seen: FlowBatch[] = [];
    const e = createEnricher(cacheLookup(filled()), { consume: (b) => seen.push(b) });
    const f = createFlow({ srcIp: '10.0.0.1', dstIp: '10.96.0.10', verdict: 'FORWARDED' });
    e.consume({ source: 't', flows: [f] });
    assert.equal(f.source?.podName, 'web-1');
    assert.equal(f.destination?.service, 'web');
    assert.deepEqual(e.stats(), { flows: 1, enrichedSides: 2 });
  });
});

describe('selectorMatches', () => {
  it('needs every key of a non-empty selector', () => {
    assert.equal(selectorMatches({ app: 'web' }, { app: 'web', x: 'y' }), true);
    assert.equal(selectorMatches({ app: 'web', tier: 'back' }, { app: 'web', tier: 'front' }), false);
    assert.equal(selectorMatches({}, { app: 'web' }), false);
  });
});
