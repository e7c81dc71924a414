/**
 * The RetinaEndpointSlice controller's packing and repairs, against in-memory informers that follow
 * its own writes (a recording client applies them), so each case reads as "these pods and slices ->
 * these writes". The controller against a real API server and kwok: test/integration/endpoint-slices.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, type Informer, type InformerFactory, type InformerSpec, type KubeObject, type ReflectorHandler, type RestClient, type RetinaEndpointSlice } from '../k8s/index.js';
import { createLogger } from '../log/index.js';
import { createMetricsRegistry } from '../metrics/index.js';
import { createRetinaEndpointSliceController, sliceEntry } from './retina-endpoint-slice-controller.js';
import type { SlimPod } from './retina-endpoint-controller.js';

/** An informer over a map the test (or the client) changes; every change is told to subscribers. */
class MemInformer<T, S> implements Informer<S> {
  readonly items = new Map<string, S>();
  readonly hs = new Set<ReflectorHandler<S>>();
  readonly synced = true;
  constructor(readonly transform: (o: T) => S) {}
  put(key: string, o: T): void {
    const v = this.transform(o);
    const old = this.items.get(key);
    this.items.set(key, v);
    for (const h of this.hs) if (old) h.updated?.(key, v, old); else h.added?.(key, v);
  }
  del(key: string): void {
    const old = this.items.get(key);
    if (!old) return;
    this.items.delete(key);
    for (const h of this.hs) h.deleted?.(key, old);
  }
  get(k: string): S | undefined { return this.items.get(k); }
  list(): S[] { return [...this.items.values()]; }
  keys(): string[] { return [...this.items.keys()]; }
  get size(): number { return this.items.size; }
  waitForSync(): Promise<void> { return Promise.resolve(); }
  stats(): never { return {} as never; }
  subscribe(h: ReflectorHandler<S>): Disposable {
    this.hs.add(h);
    for (const [k, v] of this.items) h.added?.(k, v);
    return { [Symbol.dispose]: () => void this.hs.delete(h) };
  }
}

const pod = (ip: string, app = 'web'): SlimPod => ({ uid: ip, eligible: true, deleting: false, spec: { podIP: ip, podIPs: [ip], nodeIP: '172.18.0.2', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-5d4f8c9b7` }], labels: { app } } });
const ipOf = (i: number): string => `10.0.${i >> 8}.${i & 255}`;

async function harness(o: { pods: Record<string, SlimPod>; slices?: RetinaEndpointSlice[]; maxSize: number }) {
  const pods = new MemInformer<SlimPod, SlimPod>((p) => p);
  for (const [k, p] of Object.entries(o.pods)) pods.put(k, p);
  let slicesInformer: MemInformer<RetinaEndpointSlice, unknown> | undefined;
  const stored = new Map<string, RetinaEndpointSlice>();
  const informers = {
    informer<T extends KubeObject, S>(spec: InformerSpec<T, S>): Informer<S> {
      slicesInformer = new MemInformer<RetinaEndpointSlice, unknown>(spec.transform as unknown as (o: RetinaEndpointSlice) => unknown);
      return slicesInformer as unknown as Informer<S>;
    },
    start: () => undefined, stats: () => [], [Symbol.asyncDispose]: () => Promise.resolve(),
  } as InformerFactory;
  const calls: string[] = [];
  const keyOf = (path: string): string => {
    const m = /namespaces\/([^/]+)\/retinaendpointslices(?:\/([^/]+))?$/.exec(path) as RegExpExecArray;
    return `${m[1]}/${m[2] ?? ''}`;
  };
  const client = {
    async request(method: string, path: string, opts: { body?: { metadata?: { name: string; namespace: string }; endpoints?: RetinaEndpointSlice['endpoints'] } } = {}) {
      const s = slicesInformer as MemInformer<RetinaEndpointSlice, unknown>;
      let key = keyOf(path);
      if (method === 'POST') {
        key += opts.body?.metadata?.name;
        if (stored.has(key)) throw new ApiError(409, 'AlreadyExists', 'exists');
        stored.set(key, opts.body as RetinaEndpointSlice);
      } else if (method === 'PATCH') {
        const cur = stored.get(key);
        if (!cur) throw new ApiError(404, 'NotFound', 'gone');
        stored.set(key, { ...cur, endpoints: opts.body?.endpoints ?? [] });
      } else if (method === 'DELETE') {
        if (!stored.delete(key)) throw new ApiError(404, 'NotFound', 'gone');
      }
      calls.push(`${method} ${key} ${method === 'DELETE' ? '' : (stored.get(key)?.endpoints ?? []).map((e) => e.name).join(',')}`.trim());
      // The watch event arrives after the answer.
      queueMicrotask(() => (method === 'DELETE' ? s.del(key) : s.put(key, stored.get(key) as RetinaEndpointSlice)));
      return {};
    },
  } as unknown as RestClient;
  let n = 0;
  const c = createRetinaEndpointSliceController({
    client, informers, pods: pods as unknown as Informer<SlimPod>, maxSize: o.maxSize, workers: 2, qps: 1000, burst: 1000,
    metrics: createMetricsRegistry(), log: createLogger({ level: 'error', component: 'test' }), newName: () => `s${n++}`,
  });
  for (const s of o.slices ?? []) {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    stored.set(key, s);
    (slicesInformer as MemInformer<RetinaEndpointSlice, unknown>).put(key, s);
  }
  const stop = new AbortController();
  const running = c.run(stop.signal);
  c.enqueueAll();
  const idle = async (): Promise<void> => {
    for (let quiet = 0; quiet < 5;) {
      await new Promise((r) => setTimeout(r, 5));
      quiet = c.queue.length === 0 && c.queue.pending === 0 ? quiet + 1 : 0;
    }
  };
  await idle();
  return {
    calls, stored, pods, c, idle,
    slices: (): MemInformer<RetinaEndpointSlice, unknown> => slicesInformer as MemInformer<RetinaEndpointSlice, unknown>,
    /** Every stored slice's entry names, sorted by slice key. */
    names: (): Record<string, string[]> => Object.fromEntries([...stored].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, s]) => [k, s.endpoints.map((e) => e.name)])),
    async [Symbol.asyncDispose]() {
      stop.abort();
      c.shutdown();
      await running;
    },
  };
}

/** A stored slice of these pods, their entries as the controller writes them (a name without a pod: some entry). */
const slice = (ns: string, name: string, names: string[], pods: Record<string, SlimPod>): RetinaEndpointSlice => ({
  metadata: { name, namespace: ns },
  endpoints: names.map((x) => sliceEntry(x, pods[`${ns}/${x}`] ?? pod(ipOf(999))) as RetinaEndpointSlice['endpoints'][number]),
});

describe('RetinaEndpointSlice controller', () => {
  it('packs each namespace\'s endpoint pods into slices of at most maxSize, one write per slice; entries as agents read them', async () => {
    const pods: Record<string, SlimPod> = {};
    for (let i = 0; i < 25; i++) pods[`a/p${String(i).padStart(2, '0')}`] = pod(ipOf(i));
    for (let i = 0; i < 3; i++) pods[`b/q${i}`] = pod(ipOf(100 + i), 'api');
    pods['a/done'] = { uid: 'x', eligible: false, deleting: false, spec: undefined };
    await using h = await harness({ pods, maxSize: 10 });
    assert.equal(h.calls.length, 4, h.calls.join('\n'));
    assert.ok(h.calls.every((c) => c.startsWith('POST ')), h.calls.join('\n'));
    const names = h.names();
    assert.deepEqual(Object.values(names).map((x) => x.length).sort((x, y) => x - y), [3, 5, 10, 10]);
    assert.deepEqual(Object.values(names).flat().sort(), Object.keys(pods).filter((k) => k !== 'a/done').map((k) => k.split('/')[1]).sort());
    const e = [...h.stored.values()].flatMap((s) => s.endpoints).find((x) => x.name === 'q1');
    assert.deepEqual(e, { name: 'q1', podIPs: [ipOf(101)], nodeIP: '172.18.0.2', ownerReferences: [{ kind: 'ReplicaSet', name: 'api-5d4f8c9b7' }], labels: { app: 'api' } });
  });

  it('follows pods: a new one joins a slice with room, a gone one leaves, a slice left empty is deleted, an unchanged pod writes nothing', async () => {
    const pods: Record<string, SlimPod> = { 'a/p0': pod(ipOf(0)), 'a/p1': pod(ipOf(1)), 'b/q0': pod(ipOf(9)) };
    await using h = await harness({ pods, maxSize: 3 });
    h.calls.length = 0;
    h.pods.put('a/p2', pod(ipOf(2)));
    h.pods.put('a/p3', pod(ipOf(3)));
    await h.idle();
    h.pods.put('a/p0', pod(ipOf(0))); // the same content
    h.pods.del('b/q0');
    await h.idle();
    assert.deepEqual(h.calls.slice().sort(), ['DELETE b/s1', 'PATCH a/s0 p0,p1,p2', 'POST a/s2 p3']);
    assert.deepEqual(h.names(), { 'a/s0': ['p0', 'p1', 'p2'], 'a/s2': ['p3'] });
  });

  it('a new leader keeps what is right and repairs the rest: a pod in two slices, a gone pod\'s entry, a pod in none', async () => {
    const pods: Record<string, SlimPod> = {};
    for (const n of ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6']) pods[`a/${n}`] = pod(ipOf(Number(n.slice(1))));
    const slices = [
      slice('a', 'old1', ['p0', 'p1', 'p2'], pods), // right: kept as it is
      slice('a', 'old2', ['p1', 'gone', 'p3', 'p4', 'p5'], pods), // p1 twice, gone is no pod: five entries, maxSize 3
      slice('a', 'empty', [], pods),
    ];
    await using h = await harness({ pods, slices, maxSize: 3 });
    const after = h.names();
    const all = Object.values(after).flat();
    assert.deepEqual(all.slice().sort(), ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6'], JSON.stringify(after));
    assert.ok(Object.values(after).every((x) => x.length > 0 && x.length <= 3), JSON.stringify(after));
    assert.deepEqual(after['a/old1'], ['p0', 'p1', 'p2']);
    assert.ok(!h.calls.some((c) => c.includes('a/old1')), `old1 was right and is not written: ${h.calls.join('\n')}`);
    // old2 keeps the three it may (p1 is old1's, gone is no pod); the pod in none (p6) goes where there
    // is room: the empty slice, which is filled rather than deleted and another created.
    assert.deepEqual(after, { 'a/empty': ['p6'], 'a/old1': ['p0', 'p1', 'p2'], 'a/old2': ['p3', 'p4', 'p5'] });
    assert.deepEqual(h.calls.slice().sort(), ['PATCH a/empty p6', 'PATCH a/old2 p3,p4,p5']);
  });

  it('a slice deleted by hand is written again', async () => {
    await using h = await harness({ pods: { 'a/p0': pod(ipOf(0)), 'a/p1': pod(ipOf(1)) }, maxSize: 3 });
    h.calls.length = 0;
    h.stored.delete('a/s0');
    h.slices().del('a/s0');
    await h.idle();
    assert.deepEqual(h.calls, ['POST a/s0 p0,p1']);
    assert.deepEqual(h.names(), { 'a/s0': ['p0', 'p1'] });
  });
});
