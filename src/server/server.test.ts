import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { silentLogger } from '../log/index.js';
import { startHttpServer } from './index.js';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject).end();
  });
}

test('/healthz is 503 with the reason while the health source reports a fatal condition, 200 otherwise', async () => {
  const state: { problem?: string } = {};
  await using server = await startHttpServer({
    host: '127.0.0.1', port: 0, log: silentLogger,
    expose: () => Promise.resolve({ contentType: 'text/plain', body: '' }),
    readiness: { ready: () => true, status: () => [] },
    health: () => state.problem,
  });
  const ok = await get(server.address.port, '/healthz');
  assert.equal(ok.status, 200);
  assert.equal((JSON.parse(ok.body) as { status: string }).status, 'ok');
  const problem = 'exiting after uncaught exception: boom';
  state.problem = problem;
  const failing = await get(server.address.port, '/healthz');
  assert.equal(failing.status, 503);
  assert.deepEqual({ ...(JSON.parse(failing.body) as object), uptimeSeconds: 0 }, { status: 'failing', reason: problem, uptimeSeconds: 0 });
});
