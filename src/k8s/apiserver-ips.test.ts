import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serverHost, startApiServerIps } from './apiserver-ips.js';
import { ApiError, type RestClient } from './rest.js';

function fakeClient(server: string, answers: { service?: unknown; slices?: unknown; fail?: boolean }): RestClient {
  return {
    config: { server, source: 'test', authorize: async () => undefined },
    request: async <T>(_m: string, path: string): Promise<T> => {
      if (answers.fail) throw new ApiError(503, 'ServiceUnavailable', 'down');
      if (path === '/api/v1/namespaces/default/services/kubernetes') return answers.service as T;
      if (path === '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices') return answers.slices as T;
      throw new ApiError(404, 'NotFound', path);
    },
    stream: () => Promise.reject(new Error('no streams')),
    bytesReceived: () => 0,
    close: () => undefined,
  };
}

describe('API server addresses', () => {
  it('reads the host of the server URL, IPv6 literals without brackets', () => {
    assert.equal(serverHost('https://[fd00::1]:6443'), 'fd00::1');
    assert.equal(serverHost('https://api.example.com'), 'api.example.com');
  });

  it('joins DNS, the kubernetes Service and its EndpointSlices, and keeps a source\'s last answer when it fails', async () => {
    const answers: { service?: unknown; slices?: unknown; fail?: boolean } = {
      service: { spec: { clusterIP: '10.96.0.1', clusterIPs: ['10.96.0.1', 'FD00:10:96::1'] } },
      slices: { items: [{ endpoints: [{ addresses: ['192.168.1.10'] }, { addresses: ['192.168.1.11'] }] }] },
    };
    const a = startApiServerIps({ client: fakeClient('https://api.example.com:443', answers), resolve: async () => ['203.0.113.5', '2001:db8::5'], refreshMs: 3_600_000 });
    try {
      await a.ready;
      assert.deepEqual([...a.ips()].sort(), ['10.96.0.1', '192.168.1.10', '192.168.1.11', '2001:db8::5', '203.0.113.5', 'fd00:10:96::1']);
      assert.ok(a.has('192.168.1.11'));
      let changes = 0;
      const sub = a.onChange(() => changes++);
      answers.fail = true;
      await a.refresh();
      assert.equal(a.ips().size, 6, 'an unreachable API keeps the last answers');
      assert.equal(changes, 0);
      answers.fail = false;
      answers.slices = { items: [{ endpoints: [{ addresses: ['192.168.1.12'] }] }] };
      await a.refresh();
      assert.equal(changes, 1);
      assert.ok(a.has('192.168.1.12') && !a.has('192.168.1.10'));
      sub[Symbol.dispose]();
    } finally {
      await a[Symbol.asyncDispose]();
    }
  });

  it('uses an IP literal as it is, without DNS', async () => {
    const a = startApiServerIps({ client: fakeClient('https://127.0.0.1:36443', { service: { spec: {} }, slices: { items: [] } }), resolve: () => Promise.reject(new Error('no DNS')), refreshMs: 3_600_000 });
    try {
      await a.ready;
      assert.deepEqual([...a.ips()], ['127.0.0.1']);
    } finally {
      await a[Symbol.asyncDispose]();
    }
  });
});
