import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { silentLogger } from '../log/index.js';
import { startHttpServer, type HttpServerOptions } from './index.js';

function get(port: number, path: string, method = 'GET', headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    }).on('error', reject).end();
  });
}

/** Writes `chunks` over a raw socket (pausing `gapMs` between them) and returns all the server sent, and when it closed. */
function raw(port: number, chunks: readonly string[], gapMs: number): Promise<{ reply: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const s = connect(port, '127.0.0.1');
    let reply = '';
    let i = 0;
    const next = (): void => {
      if (i < chunks.length && !s.destroyed) s.write(chunks[i++] as string, () => setTimeout(next, gapMs));
    };
    s.on('connect', next).setEncoding('latin1').on('data', (d: string) => (reply += d)).on('error', reject).on('close', () => resolve({ reply, closedAfterMs: Date.now() - t0 }));
  });
}

const base: HttpServerOptions<never> = {
  host: '127.0.0.1', port: 0, log: silentLogger,
  expose: () => Promise.resolve({ contentType: 'text/plain', body: 'm 1\n' }),
  readiness: { ready: () => true, status: () => [] },
};

test('/healthz is 503 with the reason while the health source reports a fatal condition, 200 otherwise', async () => {
  const state: { problem?: string } = {};
  await using server = await startHttpServer({ ...base, health: () => state.problem });
  const ok = await get(server.address.port, '/healthz');
  assert.equal(ok.status, 200);
  assert.equal((JSON.parse(ok.body) as { status: string }).status, 'ok');
  const problem = 'exiting after uncaught exception: boom';
  state.problem = problem;
  const failing = await get(server.address.port, '/healthz');
  assert.equal(failing.status, 503);
  assert.deepEqual({ ...(JSON.parse(failing.body) as object), uptimeSeconds: 0 }, { status: 'failing', reason: problem, uptimeSeconds: 0 });
});

test('only GET and HEAD are answered: every other method gets 405 with Allow, and HEAD gets no body', async () => {
  await using server = await startHttpServer(base);
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE']) {
    const r = await get(server.address.port, '/metrics', method);
    assert.equal(r.status, 405, method);
    assert.equal(r.headers['allow'], 'GET, HEAD', method);
    assert.ok(!r.body.includes('m 1'), method);
  }
  const head = await get(server.address.port, '/metrics', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  assert.equal((await get(server.address.port, '/metrics')).body, 'm 1\n');
});

test('a 404 says the same whatever was asked: nothing of the request comes back', async () => {
  await using server = await startHttpServer(base);
  const probe = '/%3Cscript%3Ealert(1)%3C/script%3E?x=<b>echo-me</b>';
  const a = await get(server.address.port, probe, 'GET', { 'X-Echo': 'echo-me' });
  const b = await get(server.address.port, '/nothing');
  assert.equal(a.status, 404);
  assert.equal(a.body, b.body);
  assert.ok(!a.body.includes('echo-me') && !a.body.includes('script'), a.body);
  assert.equal(a.headers['x-content-type-options'], 'nosniff');
});

test('a request head past maxHeaderBytes is refused with 431 and never reaches /metrics', async () => {
  let exposed = 0;
  await using server = await startHttpServer({ ...base, expose: () => (exposed++, Promise.resolve({ contentType: 'text/plain', body: '' })), limits: { maxHeaderBytes: 4096 } });
  const big = await raw(server.address.port, [`GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(6000)}\r\n\r\n`], 0);
  assert.match(big.reply, /^HTTP\/1\.1 431 /);
  assert.equal(exposed, 0);
  const fits = await get(server.address.port, '/metrics', 'GET', { 'X-Big': 'a'.repeat(3000) });
  assert.equal(fits.status, 200);
  // The default cap is 8 KiB (Node's own is 16 KiB).
  await using def = await startHttpServer(base);
  assert.match((await raw(def.address.port, [`GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(12_000)}\r\n\r\n`], 0)).reply, /^HTTP\/1\.1 431 /);
});

test('slow clients are cut off: a head dribbled past headersTimeout gets 408, a silent connection is closed', async () => {
  await using server = await startHttpServer({ ...base, limits: { headersTimeoutMs: 600, requestTimeoutMs: 1500, checkIntervalMs: 100 } });
  // Slowloris: one header line every 200 ms, never ending the head.
  const lines = ['GET /metrics HTTP/1.1\r\n', 'Host: x\r\n', ...Array.from({ length: 30 }, (_, i) => `X-${i}: y\r\n`)];
  const slow = await raw(server.address.port, lines, 200);
  assert.match(slow.reply, /^HTTP\/1\.1 408 /, slow.reply);
  assert.ok(slow.closedAfterMs < 3000, `closed after ${slow.closedAfterMs} ms`);
  const silent = await raw(server.address.port, [''], 0);
  assert.ok(!silent.reply.includes('200 OK'));
  assert.ok(silent.closedAfterMs < 4000, `silent connection closed after ${silent.closedAfterMs} ms`);
});

test('/metrics may be bytes: sent with their length, and released once written (HEAD too)', async () => {
  const body = Buffer.from('m{a="ü"} 1\n', 'utf8');
  let released = 0;
  await using server = await startHttpServer({ ...base, expose: () => Promise.resolve({ contentType: 'text/plain', body, release: () => void released++ }) });
  const r = await get(server.address.port, '/metrics');
  assert.equal(r.body, 'm{a="ü"} 1\n');
  assert.equal(Number(r.headers['content-length']), body.length);
  assert.equal(released, 1);
  const head = await get(server.address.port, '/metrics', 'HEAD');
  assert.equal(head.body, '');
  assert.equal(Number(head.headers['content-length']), body.length);
  assert.equal(released, 2);
});

test('quiet() resolves at once with no connection, waits for a silent accepted connection up to maxMs and for a /metrics request until it is answered', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let exposes = 0;
  await using server = await startHttpServer({
    ...base,
    expose: async () => {
      if (exposes++ === 0) await gate;
      return { contentType: 'text/plain', body: 'm 1\n' };
    },
  });
  await server.quiet(5_000); // nothing waits: at once
  const port = server.address.port;
  // A connection that has sent nothing yet waits for an answer too (it is the scrape about to come).
  const silent = connect(port, '127.0.0.1');
  await new Promise((r) => silent.once('connect', r));
  const t0 = Date.now();
  await server.quiet(300);
  assert.ok(Date.now() - t0 >= 250, 'quiet() waited for the silent connection until maxMs');
  silent.destroy();
  await new Promise((r) => setTimeout(r, 50));
  await server.quiet(5_000); // its close answered it
  // A /metrics request being handled: quiet() resolves when its response is sent, not before.
  const order: string[] = [];
  const reply = get(port, '/metrics').then((r) => order.push(`response ${r.status}`));
  while (exposes === 0) await new Promise((r) => setTimeout(r, 5));
  const quiet = server.quiet(10_000).then(() => order.push('quiet'));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(order.length, 0, 'quiet() waits while /metrics is being answered');
  release();
  await Promise.all([reply, quiet]);
  assert.equal(order.length, 2);
  assert.ok(order.includes('response 200'));
});
