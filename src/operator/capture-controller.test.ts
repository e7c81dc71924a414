/**
 * The capture controller's order of writes, against in-memory stores and a recording client (the controller
 * against a real API server, kube-controller-manager and kwok is test/integration/capture.test.ts): a capture
 * whose Jobs all succeeded gets its final status written before cleanUpAfterUpload deletes the Jobs, and a
 * lost status write (409 from a stale copy) deletes nothing, so the next reconcile still has the Jobs to read.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, type Capture, type Informer, type InformerFactory, type InformerSpec, type KubeObject, type RestClient } from '../k8s/index.js';
import { createLogger } from '../log/index.js';
import { createMetricsRegistry } from '../metrics/index.js';
import { createCaptureController } from './capture-controller.js';

/** Informers over fixed objects: synced at once, never changing. */
function fixedInformers(objects: Record<string, KubeObject[]>): InformerFactory {
  return {
    informer<T extends KubeObject, S>(spec: InformerSpec<T, S>): Informer<S> {
      const items = new Map<string, S>();
      for (const o of (objects[spec.resource.plural] ?? []) as T[]) {
        const v = spec.transform ? spec.transform(o) : (o as unknown as S);
        if (v !== undefined) items.set(`${o.metadata.namespace}/${o.metadata.name}`, v as S);
      }
      return {
        get: (k) => items.get(k), list: () => [...items.values()], keys: () => [...items.keys()], get size() { return items.size; },
        synced: true, waitForSync: () => Promise.resolve(), subscribe: () => ({ [Symbol.dispose]: () => undefined }),
        stats: () => ({ resource: spec.resource.plural, synced: true }) as never,
      };
    },
    start: () => undefined,
    stats: () => [],
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
}

const NS = 'team';
const LABELS = { 'retina.sh/app': 'capture', 'capture-name': 'up' };

const capture: Capture = {
  apiVersion: 'retina.sh/v1alpha1', kind: 'Capture',
  metadata: { name: 'up', namespace: NS, uid: 'u1', generation: 1, resourceVersion: '10', finalizers: ['kappio.io/capture-cleanup'] },
  spec: {
    captureConfiguration: { captureTarget: { nodeSelector: { matchLabels: { pool: 'a' } } }, captureOption: { duration: '1s' } },
    outputConfiguration: { hostPath: 'cc' }, cleanUpAfterUpload: true,
  },
  status: { startTime: '2026-11-29T19:00:00Z', active: 1, succeeded: 0, failed: 0 },
} as Capture;
const job = {
  metadata: { name: 'up-abcde', namespace: NS, labels: LABELS },
  spec: { template: { spec: { nodeName: 'n1' } } },
  status: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] },
} as KubeObject;
const pod = { metadata: { name: 'up-abcde-x', namespace: NS, labels: { ...LABELS, 'job-name': 'up-abcde' } }, status: { phase: 'Succeeded' } } as KubeObject;

/** Runs one reconcile of the capture with a client whose status PATCH answers `statusPatch`; the requests it made. */
async function reconcileOnce(statusPatch: 'ok' | 409): Promise<string[]> {
  const calls: string[] = [];
  const client = {
    async request(method: string, path: string, opts?: { body?: { status?: { succeeded?: number } } }) {
      // A status write is recorded with what it says: the final one has succeeded=1.
      calls.push(`${method} ${path}${path.endsWith('/status') ? ` succeeded=${opts?.body?.status?.succeeded}` : ''}`);
      if (method === 'PATCH' && path.endsWith('/status') && statusPatch === 409) throw new ApiError(409, 'Conflict', 'the object has been modified');
      if (method === 'GET' && path.endsWith('/jobs')) return { items: [job] };
      return {};
    },
  } as unknown as RestClient;
  const controller = createCaptureController({
    client, informers: fixedInformers({ captures: [capture], jobs: [job], pods: [pod] }), metrics: createMetricsRegistry(),
    events: { normal: () => undefined, warning: () => undefined }, log: createLogger({ level: 'error', component: 'test' }),
    linuxImage: 'l', windowsImage: 'w', hostPathBaseDir: '/tmp', jobNumLimit: 10, deadlineSlackMs: 1000,
  });
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  controller.queue.add(`${NS}/up`);
  const deadline = Date.now() + 5000;
  while (!calls.some((c) => c.includes('/status succeeded=1')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50)); // what the reconcile does after the status write
  stop.abort();
  controller.shutdown();
  await running;
  return calls;
}

describe('capture controller: cleanUpAfterUpload after the final status', () => {
  it('writes the succeeded status, then deletes the Jobs', async () => {
    const calls = await reconcileOnce('ok');
    const patch = calls.indexOf(`PATCH /apis/retina.sh/v1alpha1/namespaces/${NS}/captures/up/status succeeded=1`);
    const del = calls.indexOf(`DELETE /apis/batch/v1/namespaces/${NS}/jobs/up-abcde`);
    assert.ok(patch >= 0 && del > patch, calls.join('\n'));
  });

  it('a status write refused as stale (409) deletes no Job: the next reconcile still reads them', async () => {
    const calls = await reconcileOnce(409);
    assert.ok(calls.includes(`PATCH /apis/retina.sh/v1alpha1/namespaces/${NS}/captures/up/status succeeded=1`), calls.join('\n'));
    assert.deepEqual(calls.filter((c) => c.startsWith('DELETE')), []);
  });
});
