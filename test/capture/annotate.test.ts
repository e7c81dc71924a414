/**
 * After delivering its tarball, `retina-capture` annotates its own pod `retina-capture-filename:
 * <tarball>` through the real API server of the test control plane (the harness), so that
 * `kubectl-retina capture download` finds the file; a pod that does not exist only costs a warning
 * (the capture still succeeds: the annotation is best effort).
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createNamespace, deleteNamespace, startCluster, type Cluster } from '../integration/harness.js';
import { freshDir, runWorkload } from './workload-run.js';

const NS = 'capture-annotate';

describe('retina-capture annotates its pod (test control plane)', { timeout: 240_000 }, () => {
  let cluster: Cluster;
  before(async () => {
    cluster = await startCluster();
    await createNamespace(cluster.client, NS);
    await cluster.client.request('POST', `/api/v1/namespaces/${NS}/pods`, {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cap-abcde', labels: { 'retina.sh/app': 'capture', 'capture-name': 'cap' } }, spec: { containers: [{ name: 'retina-capture', image: 'retina-ts' }] } },
    });
  });
  after(async () => {
    if (!cluster) return;
    await deleteNamespace(cluster.client, NS).catch(() => undefined);
    await cluster[Symbol.asyncDispose]();
  });

  const env = (pod: string, hostPath: string): Record<string, string> => ({
    CAPTURE_NAME: 'cap', NODE_HOST_NAME: 'node-k', CAPTURE_START_TIMESTAMP: '2026-07-08T09:10:11Z', CAPTURE_DURATION: '1s', INCLUDE_METADATA: 'false',
    CAPTURE_INTERFACES: 'lo', HOSTPATH: hostPath, POD_NAME: pod, POD_NAMESPACE: NS, KUBECONFIG: cluster.kubeconfig,
  });

  it('sets retina-capture-filename to the tarball name', async () => {
    const hostPath = freshDir('cr-annotate-');
    const r = await runWorkload(env('cap-abcde', hostPath)).done;
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readdirSync(hostPath), ['cap-node-k-20260708091011UTC.tar.gz']);
    const pod = await cluster.client.request<{ metadata: { annotations?: Record<string, string> } }>('GET', `/api/v1/namespaces/${NS}/pods/cap-abcde`);
    assert.equal(pod.metadata.annotations?.['retina-capture-filename'], 'cap-node-k-20260708091011UTC.tar.gz');
  });

  it('a pod it cannot annotate is a warning, not a failed capture', async () => {
    const hostPath = freshDir('cr-annotate-');
    const r = await runWorkload(env('no-such-pod', join(hostPath, 'x'))).done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /"msg":"cannot annotate the pod with the tarball name"/);
  });
});
