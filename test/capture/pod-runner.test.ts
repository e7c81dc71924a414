/**
 * The walkthrough's kubelet player (hack/capture/run-pod.mjs): the env it gives the workload is the
 * pod's, fieldRefs resolved and host paths mapped into kwok's exec root; what it cannot play is
 * refused by name. Its run against the test control plane is capture-e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { capturePodEnv, runPodMain } from './pod-runner.js';

const pod = (env: NonNullable<NonNullable<V1Pod['spec']>['containers'][0]['env']>): V1Pod => ({
  metadata: { name: 'cap-x-1', namespace: 'ns1' },
  spec: { nodeName: 'node-a', containers: [{ name: 'capture', env }] },
});

describe('capture pod runner', () => {
  it('resolves fieldRefs and maps HOSTPATH and the base dir into the exec root', () => {
    const env = capturePodEnv(pod([
      { name: 'CAPTURE_NAME', value: 'cap' },
      { name: 'NODE_HOST_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'HOSTPATH', value: '/var/log/retina/captures/x' },
      { name: 'RETINA_CAPTURE_HOSTPATH_BASE_DIR', value: '/var/log/retina/captures' },
    ]), { execRoot: '/tmp/er', kubeconfig: '/tmp/kc' });
    assert.deepEqual(env, {
      CAPTURE_NAME: 'cap', NODE_HOST_NAME: 'node-a', POD_NAME: 'cap-x-1', POD_NAMESPACE: 'ns1',
      HOSTPATH: '/tmp/er/host/var/log/retina/captures/x', RETINA_CAPTURE_HOSTPATH_BASE_DIR: '/tmp/er/host/var/log/retina/captures',
      KUBECONFIG: '/tmp/kc',
    });
  });

  it('refuses what it cannot play, naming the variable', () => {
    assert.throws(() => capturePodEnv(pod([{ name: 'S3_KEY', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }])), /env S3_KEY: only values and fieldRefs/);
    assert.throws(() => capturePodEnv(pod([{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } }])), /env X: fieldRef metadata.uid/);
  });

  it('bad arguments exit 2', async () => {
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = () => true;
    try {
      assert.equal(await runPodMain(['--bogus']), 2);
      assert.equal(await runPodMain(['-n', 'default']), 2);
      assert.equal(await runPodMain(['--name']), 2);
    } finally {
      process.stderr.write = write;
    }
  });
});
