import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyAllowlist, resolveWorkload } from './slim.js';

describe('slim', () => {
  it('resolves ReplicaSets to Deployments and Jobs to CronJobs', () => {
    assert.deepEqual(resolveWorkload({ kind: 'ReplicaSet', name: 'web-5d4f8c9b7' }), { kind: 'Deployment', name: 'web' });
    assert.deepEqual(resolveWorkload({ kind: 'ReplicaSet', name: 'my-app-abc' }, { 'pod-template-hash': 'abc' }), { kind: 'Deployment', name: 'my-app' });
    assert.deepEqual(resolveWorkload({ kind: 'ReplicaSet', name: 'standalone' }), { kind: 'ReplicaSet', name: 'standalone' });
    assert.deepEqual(resolveWorkload({ kind: 'Job', name: 'backup-28999440' }), { kind: 'CronJob', name: 'backup' });
    assert.deepEqual(resolveWorkload({ kind: 'StatefulSet', name: 'db' }), { kind: 'StatefulSet', name: 'db' });
  });
  it('matches exact keys and prefixes', () => {
    const a = keyAllowlist(['app', 'app.kubernetes.io/*']);
    assert.ok(a('app') && a('app.kubernetes.io/name') && !a('application') && !a('pod-template-hash'));
  });
});
