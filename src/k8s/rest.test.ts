import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEventListeners } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { createRestClient, type RestConfig } from './rest.js';
import { ResponseTooLargeError } from './rest-errors.js';

describe('rest client: gzip answers', () => {
  let server: Server;
  let config: RestConfig;
  const seen: IncomingHttpHeaders[] = [];
  // A LIST page as kube-apiserver sends one over 128 KiB: compressed when the client accepts gzip.
  const page = JSON.stringify({ metadata: { resourceVersion: '7' }, items: Array.from({ length: 2000 }, (_, i) => ({ metadata: { name: `pod-${i}`, namespace: 'ns' }, spec: { podIP: `10.0.${i >> 8}.${i & 255}` } })) });
  const zipped = gzipSync(page);

  before(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
      if (req.url?.startsWith('/broken')) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(Buffer.from('not gzip at all'));
        return;
      }
      if (req.url?.startsWith('/slow')) return; // never answers
      if (req.url?.startsWith('/watch')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', ...(gzip ? { 'content-encoding': 'gzip' } : {}) }).end(gzip ? zipped : page);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    config = { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, source: 'test', authorize: async () => undefined };
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('asks for gzip, decompresses, and counts the bytes that crossed the wire', async () => {
    const c = createRestClient(config);
    try {
      const body = await c.request<{ items: { metadata: { name: string } }[] }>('GET', '/apis/x/v1/things', { query: { limit: 2000 } });
      assert.equal(seen.at(-1)?.['accept-encoding'], 'gzip');
      assert.equal(body.items.length, 2000);
      assert.equal(body.items[1999]?.metadata.name, 'pod-1999');
      assert.equal(c.bytesReceived(), zipped.length);
      assert.ok(zipped.length * 5 < Buffer.byteLength(page), `the page compresses (${zipped.length} of ${Buffer.byteLength(page)} bytes)`);
    } finally {
      c.close();
    }
  });

  it('caps the decompressed size, not the compressed one: a small body that inflates past the cap fails', async () => {
    const c = createRestClient(config);
    try {
      const cap = Buffer.byteLength(page) - 1;
      assert.ok(zipped.length < cap);
      await assert.rejects(c.request('GET', '/apis/x/v1/things', { maxBodyBytes: cap }), (e: unknown) => {
        assert.ok(e instanceof ResponseTooLargeError, String(e));
        assert.match(e.message, /GET \/apis\/x\/v1\/things/);
        return true;
      });
    } finally {
      c.close();
    }
  });

  it('names the request when a body that says gzip is not', async () => {
    const c = createRestClient(config);
    try {
      await assert.rejects(c.request('GET', '/broken'), /GET \/broken: bad gzip body/);
    } finally {
      c.close();
    }
  });

  it('watch streams do not ask for gzip (kube-apiserver never compresses them)', async () => {
    const c = createRestClient(config);
    try {
      const s = await c.stream('/watch');
      const lines: unknown[] = [];
      for await (const l of s.lines) lines.push(l);
      assert.equal(lines.length, 1);
      assert.equal(seen.at(-1)?.['accept-encoding'], undefined);
    } finally {
      c.close();
    }
  });

  it('leaves no listener on a long-lived signal once its requests are over (a leader\'s signal outlives thousands of writes)', async () => {
    const c = createRestClient(config);
    const leading = new AbortController();
    try {
      await Promise.all(Array.from({ length: 200 }, () => c.request('GET', '/apis/x/v1/things', { signal: leading.signal })));
      const s = await c.stream('/watch', { signal: leading.signal });
      for await (const _ of s.lines) { /* drain */ }
      await new Promise((r) => setImmediate(r));
      assert.equal(getEventListeners(leading.signal, 'abort').length, 0, 'each request removed its abort listener');
      // Still wired while a request runs: aborting it ends the request.
      const slow = c.request('GET', '/slow', { signal: leading.signal });
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(getEventListeners(leading.signal, 'abort').length, 1);
      leading.abort();
      await assert.rejects(slow, /aborted/);
    } finally {
      c.close();
    }
  });
});
