/**
 * The agent's view of RetinaEndpointSlices as per-pod entries, driven by hand-made slice events (the
 * whole path against a real API server and operator: test/integration/endpoint-slices.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodEndpoint } from '../cache/index.js';
import type { Informer } from './informers.js';
import type { ReflectorHandler } from './store.js';
import { podsFromSlices, sliceTransform, type SlimSlice } from './endpoint-slices.js';
import { Interner } from './slim.js';
import type { RetinaEndpointSlice, RetinaEndpointSliceEntry } from './crd/retina-endpoint-slice.js';

/** A slice informer driven by the test: `put` and `drop` play the reflector's events. */
function sliceSource(): { informer: Informer<SlimSlice>; put(name: string, entries: RetinaEndpointSliceEntry[]): void; drop(name: string): void; invalid: string[] } {
  const items = new Map<string, SlimSlice>();
  const hs = new Set<ReflectorHandler<SlimSlice>>();
  const invalid: string[] = [];
  const t = sliceTransform(new Interner(), (s, m) => invalid.push(`${s}: ${m}`));
  const informer: Informer<SlimSlice> = {
    get: (k) => items.get(k), list: () => [...items.values()], keys: () => [...items.keys()], get size() { return items.size; },
    synced: true, waitForSync: () => Promise.resolve(), stats: () => ({ resource: 'retinaendpointslices' }) as never,
    subscribe(h) {
      hs.add(h);
      return { [Symbol.dispose]: () => void hs.delete(h) };
    },
  };
  return {
    informer, invalid,
    put(name, entries) {
      const key = `ns/${name}`;
      const v = t({ metadata: { name, namespace: 'ns' }, endpoints: entries } as RetinaEndpointSlice);
      const old = items.get(key);
      items.set(key, v);
      for (const h of hs) if (old) h.updated?.(key, v, old); else h.added?.(key, v);
    },
    drop(name) {
      const key = `ns/${name}`;
      const old = items.get(key);
      items.delete(key);
      if (old) for (const h of hs) h.deleted?.(key, old);
    },
  };
}

const e = (name: string, ip: string, labels: Record<string, string> = {}): RetinaEndpointSliceEntry => ({ name, podIPs: [ip], nodeIP: '172.18.0.2', ownerReferences: [{ kind: 'ReplicaSet', name: 'web-5d4f8c9b7' }], labels: { ...labels, 'pod-template-hash': '5d4f8c9b7' } });

function recorder(pods: Informer<PodEndpoint>): string[] {
  const log: string[] = [];
  pods.subscribe({
    added: (k, v) => log.push(`+${k} ${v.ips.join(',')}`),
    updated: (k, v, old) => log.push(`~${k} ${old.ips.join(',')}->${v.ips.join(',')}`),
    deleted: (k) => log.push(`-${k}`),
  });
  return log;
}

describe('podsFromSlices: a slice informer as per-pod cache entries', () => {
  it('adds, updates and deletes entries as slices change; the entries are what a RetinaEndpoint gives', () => {
    const src = sliceSource();
    const pods = podsFromSlices(src.informer);
    const log = recorder(pods);
    src.put('a', [e('web-1', '10.0.0.1'), e('web-2', '10.0.0.2')]);
    assert.deepEqual(log.splice(0), ['+ns/web-1 10.0.0.1', '+ns/web-2 10.0.0.2']);
    const p = pods.get('ns/web-1') as PodEndpoint;
    assert.equal(p.namespace, 'ns');
    assert.deepEqual(p.workloads, [{ kind: 'Deployment', name: 'web' }]);
    assert.equal(p.nodeIP, '172.18.0.2');
    // web-2 gets a new IP, web-1 unchanged (no event), web-3 added, then web-1 leaves.
    src.put('a', [e('web-1', '10.0.0.1'), e('web-2', '10.0.0.9'), e('web-3', '10.0.0.3')]);
    src.put('a', [e('web-2', '10.0.0.9'), e('web-3', '10.0.0.3')]);
    assert.deepEqual(log.splice(0), ['~ns/web-2 10.0.0.2->10.0.0.9', '+ns/web-3 10.0.0.3', '-ns/web-1']);
    assert.deepEqual(pods.keys().sort(), ['ns/web-2', 'ns/web-3']);
    assert.equal(pods.size, 2);
    src.drop('a');
    assert.deepEqual(log.splice(0), ['-ns/web-2', '-ns/web-3']);
    assert.equal(pods.size, 0);
  });

  it('a pod moving between slices is never deleted, in either order of the two events', () => {
    for (const order of ['add-first', 'remove-first'] as const) {
      const src = sliceSource();
      const pods = podsFromSlices(src.informer);
      src.put('a', [e('web-1', '10.0.0.1'), e('web-2', '10.0.0.2')]);
      src.put('b', [e('web-3', '10.0.0.3')]);
      const log = recorder(pods);
      log.splice(0);
      if (order === 'add-first') {
        src.put('b', [e('web-3', '10.0.0.3'), e('web-1', '10.0.0.1')]);
        src.put('a', [e('web-2', '10.0.0.2')]);
        assert.deepEqual(log, [], 'moved with the same content: nothing to tell');
      } else {
        src.put('a', [e('web-2', '10.0.0.2')]);
        src.put('b', [e('web-3', '10.0.0.3'), e('web-1', '10.0.0.1')]);
        assert.deepEqual(log, ['-ns/web-1', '+ns/web-1 10.0.0.1'], 'gone for the moment between the events, as the slices said');
      }
      assert.ok(pods.get('ns/web-1'));
      // The slice that holds it now is the one whose removal deletes it.
      src.drop('a');
      assert.ok(pods.get('ns/web-1'));
      src.put('b', [e('web-3', '10.0.0.3')]);
      assert.equal(pods.get('ns/web-1'), undefined);
    }
  });

  it('a pod in two slices takes the newest entry, and the other\'s when the newest drops it', () => {
    const src = sliceSource();
    const pods = podsFromSlices(src.informer);
    src.put('a', [e('web-1', '10.0.0.1')]);
    src.put('b', [e('web-1', '10.0.0.7')]);
    assert.deepEqual(pods.get('ns/web-1')?.ips, ['10.0.0.7']);
    src.drop('b');
    assert.deepEqual(pods.get('ns/web-1')?.ips, ['10.0.0.1']);
    src.drop('a');
    assert.equal(pods.size, 0);
  });

  it('an invalid entry is skipped and named; the slice\'s other entries stay', () => {
    const src = sliceSource();
    const pods = podsFromSlices(src.informer);
    src.put('a', [e('web-1', '10.0.0.1'), e('web-2', 'not-an-ip'), { name: 'web-3', podIPs: [] } as unknown as RetinaEndpointSliceEntry, e('web-4', '10.0.0.4')]);
    assert.deepEqual(pods.keys().sort(), ['ns/web-1', 'ns/web-4']);
    assert.deepEqual(src.invalid, ['ns/a: endpoints[1]: podIP: "not-an-ip" is not an IP address', 'ns/a: endpoints[2]: podIPs: no address']);
  });

  it('a late subscriber is told every pod held, then synced', () => {
    const src = sliceSource();
    const pods = podsFromSlices(src.informer);
    src.put('a', [e('web-1', '10.0.0.1')]);
    let synced = false;
    const log: string[] = [];
    pods.subscribe({ added: (k) => log.push(k), synced: () => { synced = true; } });
    assert.deepEqual(log, ['ns/web-1']);
    assert.ok(synced);
  });
});
