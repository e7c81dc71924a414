/**
 * One bad object never blocks a reflector: per-object transform errors on LIST and WATCH, objects
 * without a name, LIST pages and watch events over the caps (against a real local HTTP server), and
 * the rate-limited log.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { Reflector, type RejectReason } from './reflector.js';
import { createRestClient } from './rest.js';
import { RejectLog } from './rejects.js';
import { resources, type KubeObject } from './resources.js';
import type { Logger, LogFields } from '../log/index.js';
import { fakeClock } from '../../test/fakes/clock.js';

type Obj = KubeObject & { v?: number; pad?: string };
const obj = (name: string, rv: string, v = 0, pad = ''): Obj => ({ metadata: { name, namespace: 'ns', resourceVersion: rv }, v, ...(pad ? { pad } : {}) });
/** Throws on negative values, as a slim transform does on a field it cannot read. */
const strict = (o: Obj): number | undefined => {
  if ((o.v ?? 0) < 0) throw new Error(`v: ${o.v} is negative`);
  return o.v;
};

function captureLog(): Logger & { lines: { msg: string; f: LogFields }[] } {
  const lines: { msg: string; f: LogFields }[] = [];
  const l = {
    lines,
    debug: () => undefined, info: () => undefined, error: () => undefined,
    warn: (msg: string, f: LogFields = {}) => void lines.push({ msg, f }),
    child: () => l,
  };
  return l;
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 1));
async function until(f: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 2000 && !f(); i++) await tick();
  assert.ok(f(), what);
}

/** A small API server on loopback: LIST pages of `items` (limit/continue), and watches the test writes to. */
async function apiServer() {
  let items: Obj[] = [];
  let rv = '1';
  const lists: URLSearchParams[] = [];
  const watches: { q: URLSearchParams; res: http.ServerResponse }[] = [];
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.searchParams.get('watch')) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      watches.push({ q: u.searchParams, res });
      return;
    }
    lists.push(u.searchParams);
    const limit = Number(u.searchParams.get('limit') || 1e9);
    const start = Number(u.searchParams.get('continue') || 0);
    const cont = start + limit < items.length ? String(start + limit) : undefined;
    res.end(JSON.stringify({ metadata: { resourceVersion: rv, continue: cont }, items: items.slice(start, start + limit) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = createRestClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, source: 'test', authorize: async () => undefined });
  return {
    client, lists, watches,
    set: (i: Obj[], r: string) => { items = i; rv = r; },
    send: (w: number, ev: unknown) => watches[w]?.res.write(`${JSON.stringify(ev)}\n`),
    async close() {
      client.close();
      for (const w of watches) w.res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

function reflector(s: Awaited<ReturnType<typeof apiServer>>, extra: Partial<ConstructorParameters<typeof Reflector<Obj, number>>[0]> = {}) {
  const rejected: RejectReason[] = [];
  const log = captureLog();
  const clock = fakeClock();
  const r = new Reflector<Obj, number>({
    client: s.client, resource: resources.pods, transform: strict, clock, random: () => 0, log,
    onRejected: (reason, resource) => { assert.equal(resource, 'pods'); rejected.push(reason); }, ...extra,
  });
  return { r, rejected, log, clock };
}

describe('Reflector: one bad object never blocks it', () => {
  it('on a LIST, skips and counts an object the transform throws on, and watches from the list resourceVersion', async (t) => {
    const s = await apiServer();
    t.after(() => s.close());
    s.set([obj('a', '5', 1), obj('bad', '6', -1), obj('c', '7', 3)], '10');
    const { r, rejected, log } = reflector(s, { pageSize: 2 });
    const h = r.start();
    t.after(() => h[Symbol.asyncDispose]());
    await until(() => s.watches.length === 1, 'watching');
    assert.deepEqual(r.keys().sort(), ['ns/a', 'ns/c'], 'the list went on past the bad object');
    assert.deepEqual(rejected, ['transform']);
    assert.equal(s.watches[0]?.q.get('resourceVersion'), '10');
    assert.equal(log.lines.length, 1);
    assert.deepEqual({ ...log.lines[0]?.f }, { resource: 'pods', count: 1, intervalMs: 60_000, object: 'ns/bad', reason: 'transform', error: 'v: -1 is negative' });
  });

  it('on a WATCH, deletes an object updated into a rejected shape (not kept stale), skips one without a name, and goes on', async (t) => {
    const s = await apiServer();
    t.after(() => s.close());
    s.set([obj('a', '5', 1), obj('c', '7', 3)], '10');
    const { r, rejected } = reflector(s);
    const deleted: string[] = [];
    r.subscribe({ deleted: (k) => deleted.push(k) });
    const h = r.start();
    t.after(() => h[Symbol.asyncDispose]());
    await until(() => s.watches.length === 1, 'watching');
    s.send(0, { type: 'MODIFIED', object: obj('a', '11', -5) });
    s.send(0, { type: 'ADDED', object: { metadata: { namespace: 'ns', resourceVersion: '12' } } });
    s.send(0, { type: 'ADDED', object: obj('d', '13', 4) });
    await until(() => r.get('ns/d') === 4, 'later events applied');
    assert.deepEqual(deleted, ['ns/a']);
    assert.equal(r.get('ns/a'), undefined);
    assert.deepEqual(rejected, ['transform', 'malformed']);
    assert.equal(r.stats().resourceVersion, '13');
    assert.equal(r.stats().rejected, 2);
    assert.equal(r.stats().errors, 0, 'no list/watch error, no relist');
    assert.equal(s.lists.length, 1);
    assert.equal(s.watches.length, 1, 'the same watch');
  });

  it('fetches a LIST page over the cap again in smaller pages, and relists after a watch event over the cap', async (t) => {
    const s = await apiServer();
    t.after(() => s.close());
    const pad = 'x'.repeat(1000);
    s.set(Array.from({ length: 10 }, (_, i) => obj(`o${i}`, String(i + 1), i, pad)), '20');
    // About 1.1 kB an object: 8 do not fit in 5 kB, 4 do.
    const { r, rejected, log, clock } = reflector(s, { pageSize: 8, maxListBytes: 5000, maxEventBytes: 3000 });
    const h = r.start();
    t.after(() => h[Symbol.asyncDispose]());
    await until(() => s.watches.length === 1, 'watching');
    assert.equal(r.size, 10);
    assert.deepEqual(s.lists.map((q) => q.get('limit')), ['8', '4', '4', '4'], 'the first page again at 4, then the rest at 4');
    assert.deepEqual(rejected, ['list_page_too_large']);
    assert.match(String(log.lines[0]?.f['error']), /GET \/api\/v1\/pods: response body exceeds the cap of 5000 bytes; listing 4 per page/);

    // One watch event over 3 kB: not parsed, counted, and the reflector relists (the event's rv is unknown).
    s.set([...Array.from({ length: 10 }, (_, i) => obj(`o${i}`, String(i + 1), i, pad)), obj('big', '21', 7, 'y'.repeat(4000))], '21');
    s.send(0, { type: 'ADDED', object: obj('big', '21', 7, 'y'.repeat(4000)) });
    await until(() => rejected.includes('watch_event_too_large'), 'counted');
    assert.equal(r.stats().errors, 1);
    clock.advance(30_000); // the backoff
    await until(() => s.watches.length === 2, 'watching again');
    assert.equal(r.get('ns/big'), 7, 'relisted: the object came in through the (smaller) pages');
    assert.equal(s.watches[1]?.q.get('resourceVersion'), '21');
    assert.deepEqual(s.lists.slice(4).map((q) => q.get('limit')), ['4', '4', '4', '2', '2'], 'the page with the big object fetched again at 2');
    assert.deepEqual(rejected, ['list_page_too_large', 'watch_event_too_large', 'list_page_too_large']);
    assert.equal(r.stats().lists, 2);
  });

  it('logs rejections at most once per interval per resource, with their count and the last one', () => {
    const clock = fakeClock();
    const log = captureLog();
    const l = new RejectLog('pods', clock, log, 60_000);
    l.note('ns/a', 'transform', 'e1');
    for (let i = 0; i < 99; i++) l.note(`ns/b${i}`, 'transform', `e${i}`);
    assert.equal(log.lines.length, 1, 'the first at once, the rest wait');
    clock.advance(60_000);
    assert.equal(log.lines.length, 2);
    assert.deepEqual({ ...log.lines[1]?.f }, { resource: 'pods', count: 99, intervalMs: 60_000, object: 'ns/b98', reason: 'transform', error: 'e98' });
    clock.advance(60_000);
    assert.equal(log.lines.length, 2, 'nothing new, nothing logged');
    l.note('ns/c', 'malformed', 'x');
    assert.equal(log.lines.length, 3);
    l[Symbol.dispose]();
  });
});
