import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IpCache, type PodEndpoint } from '../cache/index.js';
import { fakeClock } from '../../test/fakes/clock.js';
import { computeInterest, createInterestSet } from './interest.js';

const pod = (namespace: string, name: string, ips: string[], annotations: Record<string, string> = {}): PodEndpoint => ({
  kind: 'pod', namespace, name, ips, nodeIP: undefined, labels: {}, annotations, owners: [], workloads: [],
});

function cluster(): IpCache {
  const c = new IpCache();
  c.upsertPod(pod('a', 'a1', ['10.0.0.1', 'fd00::1']));
  c.upsertPod(pod('a', 'a2', ['10.0.0.2']));
  c.upsertPod(pod('b', 'b1', ['fd00::b1']));
  c.upsertPod(pod('c', 'c1', ['10.0.0.3'], { 'retina.sh': 'observe' }));
  c.upsertPod(pod('c', 'c2', ['10.0.0.4'], { 'retina.sh': 'other' }));
  c.upsertService({ kind: 'service', namespace: 'a', name: 's', ips: ['10.96.0.10'], selector: {} });
  return c;
}

const sorted = (s: ReadonlySet<string>): string[] => [...s].sort();

describe('IPs of interest', () => {
  it('selects by namespace include, exclude, all, none and annotations; v4 and v6; the API server always', () => {
    const c = cluster();
    const api = ['127.0.0.1', 'FD00:0::AB'];
    assert.deepEqual(sorted(computeInterest(c, { kind: 'none' }, api)), ['127.0.0.1', 'fd00::ab']);
    assert.deepEqual(sorted(computeInterest(c, { kind: 'include', namespaces: ['a'] }, [])), ['10.0.0.1', '10.0.0.2', 'fd00::1']);
    assert.deepEqual(sorted(computeInterest(c, { kind: 'exclude', namespaces: ['a', 'c'] }, [])), ['fd00::b1']);
    assert.deepEqual(sorted(computeInterest(c, { kind: 'all' }, [])), ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', 'fd00::1', 'fd00::b1']);
    assert.deepEqual(sorted(computeInterest(c, { kind: 'annotations', namespaces: ['b'] }, [])), ['10.0.0.3', 'fd00::b1'], 'annotated namespace b, and pod c1 annotated observe');
    assert.ok(!computeInterest(c, { kind: 'all' }, []).has('10.96.0.10'), 'service IPs are not pods');
  });

  it('keeps an IP while a selected pod still claims it (IP reuse)', () => {
    const c = cluster();
    c.upsertPod(pod('z', 'z1', ['10.0.0.2']));
    assert.deepEqual(sorted(computeInterest(c, { kind: 'include', namespaces: ['a'] }, [])), ['10.0.0.1', '10.0.0.2', 'fd00::1']);
    c.deletePod('a', 'a2');
    assert.deepEqual(sorted(computeInterest(c, { kind: 'include', namespaces: ['a'] }, [])), ['10.0.0.1', 'fd00::1']);
  });

  it('updates incrementally, notifies once per coalescing window and only on a real change', () => {
    const c = cluster();
    const clock = fakeClock();
    const set = createInterestSet({ cache: c, bypass: false, coalesceMs: 100, clock });
    // What the pod informer does: the cache first, then the subscribers.
    const upsert = (p: PodEndpoint): void => {
      const old = c.pod(p.namespace, p.name);
      c.upsertPod(p);
      set.podChanged(old, p);
    };
    const remove = (ns: string, name: string): void => {
      const old = c.pod(ns, name);
      c.deletePod(ns, name);
      set.podChanged(old, undefined);
    };
    let calls = 0;
    const sub = set.onChange(() => calls++);
    set.select({ kind: 'include', namespaces: ['a'] });
    set.setApiServerIps(['127.0.0.1']);
    upsert(pod('a', 'a3', ['10.0.0.9']));
    assert.equal(calls, 0, 'nothing before the window ends');
    clock.advance(100);
    assert.equal(calls, 1);
    assert.equal(set.stats().rebuilds, 1, 'one rebuild for the new selection');
    const first = set.ips();
    assert.deepEqual(sorted(first), ['10.0.0.1', '10.0.0.2', '10.0.0.9', '127.0.0.1', 'fd00::1']);

    // A pod outside the selection changes: no notification.
    upsert(pod('b', 'b2', ['10.0.1.1']));
    clock.advance(100);
    assert.equal(calls, 1);
    // Added and removed within one window: no notification either.
    upsert(pod('a', 'a4', ['10.0.0.10']));
    remove('a', 'a4');
    clock.advance(100);
    assert.equal(calls, 1);

    // A pod of namespace a is deleted, another changes its IP: one notification; old snapshots stay.
    remove('a', 'a2');
    upsert(pod('a', 'a1', ['10.0.0.1', 'fd00::1a']));
    clock.advance(100);
    assert.equal(calls, 2);
    assert.deepEqual(sorted(set.ips()), ['10.0.0.1', '10.0.0.9', '127.0.0.1', 'fd00::1a']);
    assert.ok(first.has('10.0.0.2'), 'a snapshot handed out does not change');
    assert.deepEqual(sorted(set.ips()), sorted(computeInterest(c, set.selection(), ['127.0.0.1'])), 'incremental equals from scratch');

    // The same selection again is a no-op; a new one rebuilds.
    set.select({ kind: 'include', namespaces: ['a'] });
    clock.advance(100);
    assert.equal(set.stats().rebuilds, 1);
    set.select({ kind: 'exclude', namespaces: ['a'] });
    clock.advance(100);
    assert.equal(calls, 3);
    assert.deepEqual(sorted(set.ips()), ['10.0.0.3', '10.0.0.4', '10.0.1.1', '127.0.0.1', 'fd00::b1']);

    // The API server moves.
    set.setApiServerIps(['10.96.0.1']);
    clock.advance(100);
    assert.equal(calls, 4);
    assert.ok(set.ips().has('10.96.0.1') && !set.ips().has('127.0.0.1'));

    sub[Symbol.dispose]();
    set.select({ kind: 'none' });
    clock.advance(100);
    assert.equal(calls, 4, 'a disposed listener hears nothing');
    assert.deepEqual(sorted(set.ips()), ['10.96.0.1']);
    set[Symbol.dispose]();
    set.select({ kind: 'all' });
    clock.advance(100);
    assert.deepEqual(sorted(set.ips()), ['10.96.0.1'], 'nothing after dispose');
  });

  it('stays equal to a recomputation under random churn, in every selection mode', () => {
    let seed = 7;
    const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    for (const sel of [
      { kind: 'include', namespaces: ['n0', 'n1'] }, { kind: 'exclude', namespaces: ['n2'] }, { kind: 'all' }, { kind: 'annotations', namespaces: ['n3'] },
    ] as const) {
      const c = new IpCache();
      const set = createInterestSet({ cache: c, bypass: false, coalesceMs: 10, clock: fakeClock() });
      set.select(sel);
      set.flush();
      for (let i = 0; i < 3000; i++) {
        const ns = `n${rnd(5)}`;
        const name = `p${rnd(60)}`;
        const old = c.pod(ns, name);
        if (rnd(4) === 0) {
          c.deletePod(ns, name);
          set.podChanged(old, undefined);
        } else {
          const ips = [`10.1.0.${rnd(120)}`, ...(rnd(2) ? [`fd00:1::${rnd(120).toString(16)}`] : [])];
          const p = pod(ns, name, ips, rnd(3) === 0 ? { 'retina.sh': 'observe' } : {});
          c.upsertPod(p);
          set.podChanged(old, p);
        }
        if (i % 97 === 0) set.flush();
      }
      set.flush();
      assert.deepEqual(sorted(set.ips()), sorted(computeInterest(c, sel, [])), sel.kind);
      set[Symbol.dispose]();
    }
  });

  it('keeps the bypass flag for consumers', () => {
    const set = createInterestSet({ cache: new IpCache(), bypass: true });
    assert.equal(set.bypass, true);
    set[Symbol.dispose]();
  });
});
