import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyAllowlist, podIps, resolveWorkload } from './slim.js';

describe('slim', () => {
  it('resolves ReplicaSets to Deployments and Jobs to CronJobs', () => {
    assert.deepEqual(resolveWorkload({ kind: 'ReplicaSet', name: 'web-5d4f8c9b7' }), { kind: 'Deployment', name: 'web' });
    assert.deepEqual(resolveWorkload({ kind: 'ReplicaSet', name: 'my-app-abc' }, { 'pod-template-hash': 'abc' }), { kind: 'Deployment', name: 'my-app' });
    assert.deepEqual(resolveWorkload({ kind: 'ReplicaSet', name: 'standalone' }), { kind: 'ReplicaSet', name: 'standalone' });
    assert.deepEqual(resolveWorkload({ kind: 'Job', name: 'backup-28999440' }), { kind: 'CronJob', name: 'backup' });
    assert.deepEqual(resolveWorkload({ kind: 'StatefulSet', name: 'db' }), { kind: 'StatefulSet', name: 'db' });
  });
  it('takes pod IPs in order, normalised, and names the field of one that is not an address', () => {
    const pod = (podIP: string, ...more: string[]) => ({ metadata: { name: 'p' }, status: { podIP, podIPs: [podIP, ...more].map((ip) => ({ ip })) } });
    assert.deepEqual(podIps(pod('10.1.2.3', 'FD00::0001')), ['10.1.2.3', 'fd00::1']);
    assert.throws(() => podIps(pod('010.1.2.3')), /status\.podIP: "010\.1\.2\.3" is not an IP address/);
    assert.throws(() => podIps(pod('10.1.2.3', 'fd00::1', '1.2.3')), /status\.podIPs\[2\]\.ip: "1\.2\.3" is not an IP address/);
  });
  it('matches exact keys and prefixes', () => {
    const a = keyAllowlist(['app', 'app.kubernetes.io/*']);
    assert.ok(a('app') && a('app.kubernetes.io/name') && !a('application') && !a('pod-template-hash'));
  });
});
