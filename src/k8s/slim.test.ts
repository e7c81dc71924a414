import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RetinaEndpoint } from './crd/retina-endpoint.js';
import { endpointFromRetinaEndpoint, keyAllowlist, nodeTransform, podIps, podTransform, resolveWorkload, serviceTransform, type NodeWire, type PodWire, type ServiceWire } from './slim.js';

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

// Hand-written expectations for objects as the API server returns them: what each transform must
// keep, normalise and drop, written out in full rather than computed (test/integration/cache-compare.ts
// compares the live cache with these same transforms, so it cannot catch a wrong transform).
describe('slim transforms: real objects, expected output written by hand', () => {
  const pod: PodWire = {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: 'web-7c9f8d6b5-x2k4q', namespace: 'shop', uid: '5f0e8c9a-1b2c-4d3e-8f90-a1b2c3d4e5f6', resourceVersion: '48213',
      labels: { app: 'web', 'app.kubernetes.io/name': 'web', 'pod-template-hash': '7c9f8d6b5', tier: 'frontend' },
      annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-11-01T10:00:00Z', 'retina.sh/team': 'checkout' },
      ownerReferences: [
        { apiVersion: 'v1', kind: 'ConfigMap', name: 'web-config', uid: 'u-1' },
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7c9f8d6b5', uid: 'u-2', controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: { nodeName: 'node-a', hostNetwork: false },
    status: {
      phase: 'Running', hostIP: '192.168.10.4', podIP: '10.244.1.17',
      podIPs: [{ ip: '10.244.1.17' }, { ip: 'FD00:10:244:1:0:0:0:11' }],
    },
  };
  const labels = keyAllowlist(['app', 'app.kubernetes.io/*']);
  const annotations = keyAllowlist(['retina.sh/*']);

  it('a Deployment pod, dual stack: both IPs (IPv6 in short lower-case form), the controller owner and its Deployment, allowlisted keys only', () => {
    assert.deepStrictEqual(podTransform(labels, annotations)(pod), {
      kind: 'pod', namespace: 'shop', name: 'web-7c9f8d6b5-x2k4q', ips: ['10.244.1.17', 'fd00:10:244:1::11'], nodeIP: '192.168.10.4',
      labels: { app: 'web', 'app.kubernetes.io/name': 'web' },
      annotations: { 'retina.sh/team': 'checkout' },
      owners: [{ kind: 'ReplicaSet', name: 'web-7c9f8d6b5' }],
      workloads: [{ kind: 'Deployment', name: 'web' }],
    });
  });

  it('no controller among the owners: every owner is kept; a CronJob\'s Job resolves to the CronJob', () => {
    const job: PodWire = {
      ...pod, metadata: { name: 'backup-29000000-abcde', namespace: 'ops', ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'backup-29000000', uid: 'u-3' }] },
      status: { phase: 'Pending', podIP: '10.244.2.9', podIPs: [{ ip: '10.244.2.9' }] },
    };
    assert.deepStrictEqual(podTransform(labels, annotations)(job), {
      kind: 'pod', namespace: 'ops', name: 'backup-29000000-abcde', ips: ['10.244.2.9'], nodeIP: undefined, labels: {}, annotations: {},
      owners: [{ kind: 'Job', name: 'backup-29000000' }], workloads: [{ kind: 'CronJob', name: 'backup' }],
    });
  });

  it('pods without addresses of their own are not endpoints: host network, finished, not yet scheduled', () => {
    const t = podTransform(labels, annotations);
    assert.equal(t({ ...pod, spec: { nodeName: 'node-a', hostNetwork: true }, status: { ...pod.status, podIP: '192.168.10.4', podIPs: [{ ip: '192.168.10.4' }] } }), undefined);
    assert.equal(t({ ...pod, status: { ...pod.status, phase: 'Succeeded' } }), undefined);
    assert.equal(t({ ...pod, status: { ...pod.status, phase: 'Failed' } }), undefined);
    assert.equal(t({ ...pod, status: { phase: 'Pending' } }), undefined);
  });

  it('a dual-stack Service: every ClusterIP once, then load-balancer ingress IPs (a hostname-only ingress adds none)', () => {
    const svc: ServiceWire = {
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', resourceVersion: '9' },
      spec: { type: 'LoadBalancer', clusterIP: '10.96.12.34', clusterIPs: ['10.96.12.34', 'fd00:10:96::1:0'], selector: { app: 'web' } },
      status: { loadBalancer: { ingress: [{ ip: '203.0.113.10' }, { hostname: 'web.example.com' }] } },
    };
    assert.deepStrictEqual(serviceTransform(svc), {
      kind: 'service', namespace: 'shop', name: 'web', ips: ['10.96.12.34', 'fd00:10:96::1:0', '203.0.113.10'], selector: { app: 'web' },
    });
  });

  it('a headless Service and an ExternalName Service hold no IPs: no entry', () => {
    const meta = { name: 'db', namespace: 'shop' };
    assert.equal(serviceTransform({ metadata: meta, spec: { type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'], selector: { app: 'db' } } }), undefined);
    assert.equal(serviceTransform({ metadata: meta, spec: { type: 'ExternalName' } }), undefined);
  });

  it('a Node: InternalIP and ExternalIP of both families (not Hostname), and its zone; the legacy zone label too', () => {
    const node: NodeWire = {
      apiVersion: 'v1', kind: 'Node',
      metadata: { name: 'node-a', labels: { 'kubernetes.io/hostname': 'node-a', 'topology.kubernetes.io/zone': 'westeurope-1' } },
      status: { addresses: [
        { type: 'InternalIP', address: '192.168.10.4' }, { type: 'InternalIP', address: 'fd00:192:168:10::4' },
        { type: 'ExternalIP', address: '198.51.100.7' }, { type: 'Hostname', address: 'node-a' }, { type: 'InternalDNS', address: 'node-a.internal' },
      ] },
    };
    assert.deepStrictEqual(nodeTransform(node), { kind: 'node', name: 'node-a', ips: ['192.168.10.4', 'fd00:192:168:10::4', '198.51.100.7'], zone: 'westeurope-1' });
    assert.deepStrictEqual(nodeTransform({ metadata: { name: 'old', labels: { 'failure-domain.beta.kubernetes.io/zone': 'z2' } } }), { kind: 'node', name: 'old', ips: [], zone: 'z2' });
  });

  it('a RetinaEndpoint (remote context): its IPs, node IP, owners resolved to the workload, all its labels and annotations', () => {
    const re: RetinaEndpoint = {
      apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: 'web-7c9f8d6b5-x2k4q', namespace: 'shop', resourceVersion: '77' },
      spec: {
        podIP: '10.244.1.17', podIPs: ['10.244.1.17', 'fd00:10:244:1::0011'], nodeIP: '192.168.10.4',
        containers: [{ name: 'web', id: 'containerd://abc' }],
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7c9f8d6b5' }],
        labels: { app: 'web', 'pod-template-hash': '7c9f8d6b5' }, annotations: { 'retina.sh/team': 'checkout' },
      },
    };
    assert.deepStrictEqual(endpointFromRetinaEndpoint(re), {
      kind: 'pod', namespace: 'shop', name: 'web-7c9f8d6b5-x2k4q', ips: ['10.244.1.17', 'fd00:10:244:1::11'], nodeIP: '192.168.10.4',
      labels: { app: 'web', 'pod-template-hash': '7c9f8d6b5' }, annotations: { 'retina.sh/team': 'checkout' },
      owners: [{ kind: 'ReplicaSet', name: 'web-7c9f8d6b5' }], workloads: [{ kind: 'Deployment', name: 'web' }],
    });
    assert.equal(endpointFromRetinaEndpoint({ ...re, spec: { ...re.spec, podIP: '', podIPs: [] } }), undefined);
  });
});
