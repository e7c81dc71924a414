import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Reflector } from './reflector.js';
import { ApiError, type RestClient, type WatchStream } from './rest.js';
import { resources, type KubeObject } from './resources.js';
import { fakeClock } from '../../test/fakes/clock.js';

type Obj = KubeObject & { v?: number };
const obj = (name: string, rv: string, v = 0): Obj => ({ metadata: { name, namespace: 'ns', resourceVersion: rv }, v });

/** An API server in a box: lists come from `items`, watches from lines pushed by the test. */
function fakeServer() {
  let items: Obj[] = [];
  let rv = '1';
  const watches: { query: Record<string, unknown>; push(l: unknown): void; end(): void; ended: boolean }[] = [];
  const lists: Record<string, unknown>[] = [];
  const client: RestClient = {
    config: { server: 'https://fake', source: 'fake', authorize: async () => undefined },
    async request<T>(_m: string, _p: string, o?: { query?: Record<string, unknown> }): Promise<T> {
      lists.push(o?.query ?? {});
      const limit = Number(o?.query?.['limit'] ?? 1e9);
      const start = Number(o?.query?.['continue'] ?? 0);
      const page = items.slice(start, start + limit);
      const cont = start + limit < items.length ? String(start + limit) : undefined;
      return { metadata: { resourceVersion: rv, continue: cont }, items: page } as T;
    },
    async stream(_p: string, o?: { query?: Record<string, unknown> }): Promise<WatchStream> {
      const buf: unknown[] = [];
      let wake: (() => void) | undefined;
      const w = {
        query: o?.query ?? {}, ended: false,
        push(l: unknown) { buf.push(l); wake?.(); },
        end() { w.ended = true; wake?.(); },
      };
      watches.push(w);
      async function* lines(): AsyncGenerator<unknown> {
        for (;;) {
          while (buf.length) yield buf.shift();
          if (w.ended) return;
          await new Promise<void>((r) => (wake = r));
        }
      }
      return { lines: lines(), [Symbol.dispose]: () => w.end() };
    },
    bytesReceived: () => 0,
    close: () => undefined,
  };
  return { client, watches, lists, set: (i: Obj[], r: string) => { items = i; rv = r; } };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
async function until(f: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !f(); i++) await tick();
  assert.ok(f());
}

describe('Reflector', () => {
  it('lists in pages, watches from the list resourceVersion, applies events, skips equal updates', async () => {
    const s = fakeServer();
    s.set([obj('a', '5'), obj('b', '6'), obj('c', '7')], '10');
    const clock = fakeClock();
    const r = new Reflector<Obj, number>({ client: s.client, resource: resources.pods, transform: (o) => o.v, pageSize: 2, clock, random: () => 0 });
    const seen: string[] = [];
    r.subscribe({ added: (k) => seen.push(`+${k}`), updated: (k) => seen.push(`~${k}`), deleted: (k) => seen.push(`-${k}`) });
    const h = r.start();
    await until(() => s.watches.length === 1);
    assert.equal(s.lists.length, 2, 'two pages');
    assert.equal(s.watches[0]?.query['resourceVersion'], '10');
    assert.equal(s.watches[0]?.query['allowWatchBookmarks'], true);
    s.watches[0]?.push({ type: 'MODIFIED', object: obj('a', '11', 0) }); // same slim value: no event
    s.watches[0]?.push({ type: 'MODIFIED', object: obj('b', '12', 1) });
    s.watches[0]?.push({ type: 'DELETED', object: obj('c', '13') });
    s.watches[0]?.push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '20' } } });
    await until(() => r.stats().resourceVersion === '20');
    assert.deepEqual(seen, ['+ns/a', '+ns/b', '+ns/c', '~ns/b', '-ns/c']);
    await h[Symbol.asyncDispose]();
  });

  it('relists on a 410 ERROR event and reports deletions it missed', async () => {
    const s = fakeServer();
    s.set([obj('a', '5'), obj('b', '6')], '10');
    const clock = fakeClock();
    const r = new Reflector<Obj, number>({ client: s.client, resource: resources.pods, transform: (o) => o.v, clock, random: () => 0 });
    const gone: string[] = [];
    r.subscribe({ deleted: (k) => gone.push(k) });
    const h = r.start();
    await until(() => s.watches.length === 1);
    s.set([obj('a', '5')], '30');
    s.watches[0]?.push({ type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old resource version' } });
    await until(() => r.stats().gone === 1);
    clock.advance(1000); // the short jittered pause before relisting
    await until(() => s.watches.length === 2);
    assert.deepEqual(gone, ['ns/b']);
    assert.equal(s.watches[1]?.query['resourceVersion'], '30');
    await h[Symbol.asyncDispose]();
    assert.equal(r.stats().gone, 1);
  });

  it('restarts a silent watch (watchdog) and backs off after errors', async () => {
    const s = fakeServer();
    s.set([obj('a', '5')], '10');
    const clock = fakeClock();
    const r = new Reflector<Obj, number>({ client: s.client, resource: resources.pods, transform: (o) => o.v, clock, inactivityTimeoutMs: 1000, random: () => 0 });
    const h = r.start();
    await until(() => s.watches.length === 1);
    clock.advance(1000);
    await until(() => s.watches.length === 2);
    assert.equal(r.stats().watchdogRestarts, 1);
    assert.equal(s.watches[1]?.query['resourceVersion'], '10', 'the watch resumes, no relist');
    // an error answer: reconnect after a backoff measured on the clock
    const orig = s.client.stream.bind(s.client);
    let fail = true;
    s.client.stream = async (p, o) => {
      if (fail) {
        fail = false;
        throw new ApiError(500, 'InternalError', 'boom');
      }
      return orig(p, o);
    };
    s.watches[1]?.push({ type: 'ADDED', object: obj('x', '11') });
    await until(() => r.size === 2);
    s.watches[1]?.end();
    await until(() => r.stats().errors === 1);
    assert.equal(s.watches.length, 2, 'waiting for the backoff');
    clock.advance(30_000);
    await until(() => s.watches.length === 3);
    assert.equal(r.stats().reconnects, 1);
    await h[Symbol.asyncDispose]();
  });

  it('streams the initial state (WatchList), drops what the stream did not send, and falls back to LIST', async () => {
    const s = fakeServer();
    const r = new Reflector<Obj, number>({ client: s.client, resource: resources.pods, transform: (o) => o.v, clock: fakeClock(), random: () => 0, initialState: 'stream' });
    let synced = 0;
    r.subscribe({ synced: () => synced++ });
    const h = r.start();
    await until(() => s.watches.length === 1);
    assert.equal(s.watches[0]?.query['sendInitialEvents'], true);
    assert.equal(s.watches[0]?.query['resourceVersionMatch'], 'NotOlderThan');
    assert.equal(s.lists.length, 0, 'no LIST');
    s.watches[0]?.push({ type: 'ADDED', object: obj('a', '5') });
    s.watches[0]?.push({ type: 'ADDED', object: obj('b', '6') });
    assert.equal(r.synced, false);
    s.watches[0]?.push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '9', annotations: { 'k8s.io/initial-events-end': 'true' } } } });
    await until(() => r.synced);
    assert.equal(synced, 1);
    assert.deepEqual(r.keys().sort(), ['ns/a', 'ns/b']);
    await h[Symbol.asyncDispose]();

    const old = fakeServer();
    old.set([obj('x', '3')], '4');
    old.client.stream = async () => {
      throw new ApiError(422, 'Invalid', 'sendInitialEvents is forbidden');
    };
    const r2 = new Reflector<Obj, number>({ client: old.client, resource: resources.pods, transform: (o) => o.v, clock: fakeClock(), random: () => 0, initialState: 'stream' });
    const h2 = r2.start();
    await until(() => r2.synced);
    assert.deepEqual(r2.keys(), ['ns/x']);
    await h2[Symbol.asyncDispose]();
  });
});
