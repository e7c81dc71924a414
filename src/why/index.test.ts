/** explainReach within its budget: an API server that never answers is named as too slow, not waited for. */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { packageFile } from '../cli/command.js';
import { hubbleProtoFiles } from '../flow/hubble/index.js';
import { createRestClient } from '../k8s/index.js';
import { explainReach } from './index.js';

describe('why: the budget', () => {
  it('an API server that never answers: "no answer within" the budget, in about the budget', async () => {
    const server = createServer(() => undefined); // never answers
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = createRestClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, source: 'test', authorize: async () => undefined });
    const t0 = Date.now();
    try {
      await assert.rejects(explainReach({
        client, protos: hubbleProtoFiles(packageFile('proto/hubble'), ['observer.proto']), windowMs: 60_000, last: 10, timeoutMs: 1000,
        src: { kind: 'pod', namespace: 'a', name: 'cli' }, dst: { kind: 'pod', namespace: 'b', name: 'srv', port: 80 },
      }), /^Error: no answer within 1000 ms \(the API server or an agent too slow\)/);
      const took = Date.now() - t0;
      assert.ok(took >= 900 && took < 5000, `gave up after ${took} ms`);
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
