import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { createFlow, type Endpoint } from '../../flow/index.js';
import { createNamespaceTracker, NAMESPACE_SWEEP_MS, NAMESPACE_TTL_MS } from './namespaces.js';

const ep = (namespace: string): Endpoint => Object.freeze({ namespace, podName: 'p', workloadKind: '', workloadName: '', service: '', nodeName: '', zone: '', labels: {} });
const flow = (src: Endpoint | undefined, dst: Endpoint | undefined) => Object.assign(createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED' }), { source: src, destination: dst });

describe('GetNamespaces: namespaces seen in flows (Cilium\'s namespace manager)', () => {
  it('adds both sides\' namespaces, skips empty ones, sorts, names the cluster', () => {
    const t = createNamespaceTracker('c1', () => 1000);
    const web = ep('web');
    t.consume({ source: 't', flows: [flow(web, ep('db')), flow(web, undefined), flow(ep(''), ep('api')), flow(undefined, web)] });
    assert.deepEqual(t.list(), [{ cluster: 'c1', namespace: 'api' }, { cluster: 'c1', namespace: 'db' }, { cluster: 'c1', namespace: 'web' }]);
  });

  it('forgets a namespace not seen for an hour; a namespace seen again stays', () => {
    let now = 0;
    const t = createNamespaceTracker('default', () => now);
    const a = ep('a');
    t.consume({ source: 't', flows: [flow(a, ep('b'))] });
    now = NAMESPACE_TTL_MS - 1000;
    // The same endpoint object in a later batch is stamped again.
    t.consume({ source: 't', flows: [flow(a, undefined)] });
    now = NAMESPACE_TTL_MS + 1;
    assert.deepEqual(t.list().map((n) => n.namespace), ['a']);
    now = 2 * NAMESPACE_TTL_MS;
    assert.deepEqual(t.list(), []);
  });

  it('sweeps on the drain path too, at most every 5 minutes', () => {
    let now = 0;
    const t = createNamespaceTracker('default', () => now, 10);
    t.consume({ source: 't', flows: [flow(ep('old'), undefined)] });
    now = NAMESPACE_SWEEP_MS;
    t.consume({ source: 't', flows: [flow(ep('new'), undefined)] });
    assert.deepEqual(t.list().map((n) => n.namespace), ['new']);
  });
});
