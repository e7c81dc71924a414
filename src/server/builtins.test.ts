import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

// In a process of its own: this test file's own imports (node:test, node:child_process) must not
// count. Building the ES namespace of node:http reads every export, and its WebSocket getters load
// Node's bundled undici (about 6 MB anonymous and 4 MB file-backed RSS in a bare process).
test("the agent's HTTP server and the Kubernetes REST client serve and request without loading Node's bundled undici", () => {
  const server = new URL('./index.js', import.meta.url).href;
  const rest = new URL('../k8s/rest.js', import.meta.url).href;
  const log = new URL('../log/index.js', import.meta.url).href;
  const script = `
    const { startHttpServer } = await import(${JSON.stringify(server)});
    const { createRestClient } = await import(${JSON.stringify(rest)});
    const { silentLogger } = await import(${JSON.stringify(log)});
    const srv = await startHttpServer({
      host: '127.0.0.1', port: 0, log: silentLogger,
      expose: () => Promise.resolve({ contentType: 'text/plain', body: '' }),
      readiness: { ready: () => true, status: () => [] },
    });
    const client = createRestClient({ server: 'http://127.0.0.1:' + srv.address.port, source: 'test', authorize: () => Promise.resolve() });
    const health = await client.request('GET', '/healthz');
    client.close();
    await srv[Symbol.asyncDispose]();
    console.log(JSON.stringify({ health, undici: process.moduleLoadList.filter((m) => m.includes('undici')) }));
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { health: { status: string }; undici: string[] };
  assert.equal(out.health.status, 'ok', 'the request went through');
  assert.deepEqual(out.undici, []);
});
