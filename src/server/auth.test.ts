import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import type { RestClient } from '../k8s/index.js';
import { silentLogger } from '../log/index.js';
import { bearerToken, createKubeAuthorizer } from './auth.js';
import { startHttpServer } from './index.js';

/** An in-memory API server answering the two reviews (the integration test uses the real one). */
function fakeApi(o: { users: Record<string, string>; allowed: string[]; down?: () => boolean }): RestClient & { calls: string[] } {
  const calls: string[] = [];
  const client = {
    calls,
    request(method: string, path: string, opts?: { body?: unknown }) {
      calls.push(path.split('/')[4] ?? path);
      if (o.down?.()) return Promise.reject(new Error('connect ECONNREFUSED'));
      const spec = (opts?.body as { spec: { token?: string; user?: string } }).spec;
      if (path.endsWith('/tokenreviews')) {
        const user = o.users[spec.token ?? ''];
        return Promise.resolve({ status: user ? { authenticated: true, user: { username: user, groups: [] } } : { authenticated: false, error: 'invalid bearer token' } });
      }
      return Promise.resolve({ status: { allowed: o.allowed.includes(spec.user ?? '') } });
    },
  };
  return client as unknown as RestClient & { calls: string[] };
}

test('bearerToken takes only "Bearer <token>"', () => {
  assert.equal(bearerToken('Bearer abc.def'), 'abc.def');
  assert.equal(bearerToken('bearer  abc'), 'abc');
  for (const h of [undefined, '', 'Bearer', 'Bearer ', 'Basic YTpi', 'Bearer a b', 'Token abc']) assert.equal(bearerToken(h), undefined, String(h));
});

test('an API server that cannot answer gives 503 and is asked again next time; concurrent scrapes share one review', async () => {
  let down = true;
  const api = fakeApi({ users: { t1: 'system:serviceaccount:m:prom' }, allowed: ['system:serviceaccount:m:prom'], down: () => down });
  const auth = createKubeAuthorizer({ client: api, log: silentLogger, allowedTtlMs: 60_000, deniedTtlMs: 60_000, cacheSize: 10 });
  await using server = await startHttpServer({
    host: '127.0.0.1', port: 0, log: silentLogger, auth,
    expose: () => Promise.resolve({ contentType: 'text/plain', body: 'm 1\n' }),
    readiness: { ready: () => true, status: () => [] },
  });
  const get = (token: string): Promise<number> => new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: server.address.port, path: '/metrics', headers: { Authorization: `Bearer ${token}` }, agent: false }, (res) => {
      res.resume().on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject).end();
  });
  assert.equal(await get('t1'), 503);
  assert.equal(auth.cacheEntries(), 0);
  down = false;
  assert.deepEqual(await Promise.all([get('t1'), get('t1'), get('t1')]), [200, 200, 200]);
  assert.deepEqual(api.calls, ['tokenreviews', 'tokenreviews', 'subjectaccessreviews']);
  assert.equal(await get('nope'), 401);
  assert.equal(await get('nope'), 401);
  assert.equal(api.calls.filter((c) => c === 'tokenreviews').length, 3);
});

test('the review cache drops the least recently used entry: a scraper that keeps scraping stays cached through bad tokens', async () => {
  const api = fakeApi({ users: { good: 'prom' }, allowed: ['prom'] });
  const auth = createKubeAuthorizer({ client: api, log: silentLogger, allowedTtlMs: 60_000, deniedTtlMs: 60_000, cacheSize: 2 });
  const reviews = (): number => api.calls.filter((c) => c === 'tokenreviews').length;
  assert.equal((await auth.authorize('Bearer good', '/metrics')).outcome, 'allowed');
  for (let i = 0; i < 5; i++) {
    assert.equal((await auth.authorize(`Bearer bad-${i}`, '/metrics')).outcome, 'unauthenticated');
    assert.equal((await auth.authorize('Bearer good', '/metrics')).outcome, 'allowed');
  }
  assert.equal(reviews(), 6, 'one review for the good token, one per bad token');
  assert.equal(auth.cacheEntries(), 2);
});

test('a flood of distinct tokens runs at most maxReviewsInFlight reviews at once; the excess gets throttled (429) and a cached scraper keeps its answer', async () => {
  const api = fakeApi({ users: { good: 'prom' }, allowed: ['prom'] });
  // The API server answers only when released, so the flood's reviews stay in flight.
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  let open = true;
  const slow = {
    request: async (m: string, p: string, opts?: { body?: unknown }) => {
      if (!open) await gate;
      return api.request(m, p, opts as never);
    },
  } as unknown as typeof api;
  const auth = createKubeAuthorizer({ client: slow, log: silentLogger, allowedTtlMs: 60_000, deniedTtlMs: 60_000, cacheSize: 100, maxReviewsInFlight: 4 });
  assert.equal((await auth.authorize('Bearer good', '/metrics')).outcome, 'allowed');
  open = false;
  const flood = Array.from({ length: 50 }, (_, i) => auth.authorize(`Bearer bad-${i}`, '/metrics'));
  assert.equal((await auth.authorize('Bearer good', '/metrics')).outcome, 'allowed', 'cached while the flood waits');
  await new Promise((r) => setImmediate(r));
  release();
  const outcomes = (await Promise.all(flood)).map((d) => d.outcome);
  assert.equal(outcomes.filter((x) => x === 'unauthenticated').length, 4);
  assert.equal(outcomes.filter((x) => x === 'throttled').length, 46);
  assert.equal(auth.throttled(), 46);
  assert.equal(api.calls.filter((c) => c === 'tokenreviews').length, 1 + 4);
  // Once they settle, new tokens are reviewed again.
  assert.equal((await auth.authorize('Bearer bad-x', '/metrics')).outcome, 'unauthenticated');

  await using server = await startHttpServer({
    host: '127.0.0.1', port: 0, log: silentLogger, auth: { authorize: () => Promise.resolve({ outcome: 'throttled', reason: 'test' }) },
    expose: () => Promise.resolve({ contentType: 'text/plain', body: 'm 1\n' }),
    readiness: { ready: () => true, status: () => [] },
  });
  const res = await fetch(`http://127.0.0.1:${server.address.port}/metrics`, { headers: { Authorization: 'Bearer z' } });
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('retry-after'), '1');
});
