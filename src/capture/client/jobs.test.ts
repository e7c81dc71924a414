import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, type RestClient } from '../../k8s/index.js';
import { deleteCapture, listCaptures } from './jobs.js';

/** An in-memory API: GET answers by path prefix (an ApiError is thrown), every request recorded. */
function fakeApi(answers: Record<string, unknown>): RestClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async request<T>(method: string, path: string, o?: { query?: Record<string, unknown> }): Promise<T> {
      asked.push(`${method} ${path}${o?.query?.['labelSelector'] ? `?${String(o.query['labelSelector'])}` : ''}`);
      const hit = Object.entries(answers).find(([k]) => `${method} ${path}`.startsWith(k))?.[1];
      if (hit instanceof ApiError) throw hit;
      return (hit ?? { items: [] }) as T;
    },
    stream: () => Promise.reject(new Error('no streams')),
    bytesReceived: () => 0,
    config: { server: 'https://fake.invalid', source: 'fake', authorize: async () => undefined },
    close: () => undefined,
  };
}

const job = (ns: string, capture: string, node: string, status: object): unknown => ({
  metadata: { namespace: ns, name: `${capture}-${node}`, labels: { 'retina.sh/app': 'capture', 'capture-name': capture } },
  spec: { template: { spec: { nodeName: node } } }, status,
});

test('listCaptures: Capture resources with their status, Jobs alone by capture-name, sorted; no Capture CRD means Jobs only', async () => {
  const jobs = { items: [job('b', 'web', 'n2', { active: 1 }), job('b', 'web', 'n1', { succeeded: 1 }), job('a', 'op', 'n1', { failed: 1 })] };
  const api = fakeApi({
    'GET /apis/batch/v1/jobs': jobs,
    'GET /apis/retina.sh/v1alpha1/captures': { items: [{ metadata: { namespace: 'a', name: 'op' }, status: { conditions: [{ type: 'error', status: 'True', reason: 'RunJobFailed' }] } }] },
  });
  assert.deepEqual(await listCaptures(api, undefined), [
    { namespace: 'a', name: 'op', kind: 'Capture', jobs: 1, active: 0, succeeded: 0, failed: 1, state: 'RunJobFailed', nodes: ['n1'] },
    { namespace: 'b', name: 'web', kind: 'Jobs', jobs: 2, active: 1, succeeded: 1, failed: 0, state: 'JobsInProgress', nodes: ['n1', 'n2'] },
  ]);
  assert.equal(api.asked[0], 'GET /apis/batch/v1/jobs?retina.sh/app=capture');
  const noCrd = fakeApi({ 'GET /apis/batch': jobs, 'GET /apis/retina.sh': new ApiError(404, 'NotFound', 'no such kind') });
  assert.deepEqual((await listCaptures(noCrd, 'b')).map((c) => `${c.kind} ${c.namespace}/${c.name}`), ['Jobs a/op', 'Jobs b/web']);
  await assert.rejects(listCaptures(fakeApi({ 'GET /apis/retina.sh': new ApiError(500, 'InternalError', 'etcd down') }), 'a'), /etcd down/);
});

test('deleteCapture: the Capture resource when it exists, else the Jobs and only the Secrets labelled as the capture\'s', async () => {
  const resource = fakeApi({});
  assert.deepEqual(await deleteCapture(resource, 'ns', 'cap'), { kind: 'resource' });
  assert.deepEqual(resource.asked, ['DELETE /apis/retina.sh/v1alpha1/namespaces/ns/captures/cap']);
  const mounted = { ...(job('ns', 'cap', 'n1', {}) as object), spec: { template: { spec: { nodeName: 'n1', volumes: [{ secret: { secretName: 'cap-blob-upload-secret' } }, { secret: { secretName: 'shared' } }] } } } };
  const api = fakeApi({
    'DELETE /apis/retina.sh': new ApiError(404, 'NotFound', 'no capture'),
    'GET /apis/batch/v1/namespaces/ns/jobs': { items: [mounted] },
    'GET /api/v1/namespaces/ns/secrets/shared': { metadata: { name: 'shared', labels: {} } },
    'GET /api/v1/namespaces/ns/secrets/cap-blob-upload-secret': { metadata: { name: 'cap-blob-upload-secret', labels: { 'retina.sh/app': 'capture', 'capture-name': 'cap' } } },
  });
  assert.deepEqual(await deleteCapture(api, 'ns', 'cap'), { kind: 'jobs', jobs: 1, secrets: 1 });
  assert.ok(api.asked.includes('DELETE /apis/batch/v1/namespaces/ns/jobs/cap-n1'));
  assert.ok(api.asked.includes('DELETE /api/v1/namespaces/ns/secrets/cap-blob-upload-secret'));
  assert.ok(!api.asked.includes('DELETE /api/v1/namespaces/ns/secrets/shared'), 'a Secret not made for the capture stays');
});
