/**
 * `helm install` of every profile into the real test control plane (test/integration/harness.ts),
 * with kwok nodes of both OSes and a tainted system pool: each DaemonSet places exactly one agent
 * pod on every node of its OS (tainted ones included) and none elsewhere, the operator Deployment
 * becomes ready (kwok runs the pods), and `helm uninstall` leaves none of the release's objects.
 * CRDs stay after uninstall (Helm never deletes crds/; README says how to remove them).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { collectionPath, objectPath, resources, type KubeObject, type ResourceRef, type RestClient } from '../../src/k8s/index.js';
import { join } from 'node:path';
import { ROOT, eventually, listAll, startCluster, type Cluster } from '../integration/harness.js';
import { CHART, PROFILES, profileFile, tool } from './helm.js';

const r = (group: string, plural: string, kind: string, namespaced: boolean, version = 'v1'): ResourceRef => ({ group, version, plural, kind, namespaced });
const daemonSets = r('apps', 'daemonsets', 'DaemonSet', true);
const deploymentsRes = r('apps', 'deployments', 'Deployment', true);
const KINDS: readonly ResourceRef[] = [
  daemonSets, deploymentsRes, r('', 'configmaps', 'ConfigMap', true), resources.services, r('', 'serviceaccounts', 'ServiceAccount', true),
  r('rbac.authorization.k8s.io', 'roles', 'Role', true), r('rbac.authorization.k8s.io', 'rolebindings', 'RoleBinding', true),
  r('rbac.authorization.k8s.io', 'clusterroles', 'ClusterRole', false), r('rbac.authorization.k8s.io', 'clusterrolebindings', 'ClusterRoleBinding', false),
  resources.pods,
];

const ID = `c${process.pid.toString(36)}`;
const NODES = [
  { name: `${ID}-linux-0`, os: 'linux' },
  { name: `${ID}-linux-1`, os: 'linux' },
  { name: `${ID}-system-0`, os: 'linux', taint: true },
  { name: `${ID}-win-0`, os: 'windows', taint: true },
];

interface PodLike extends KubeObject { spec: { nodeName?: string }; status?: { phase?: string } }

async function addNodes(client: RestClient): Promise<void> {
  for (const n of NODES) {
    await client.request('POST', collectionPath(resources.nodes), {
      body: {
        apiVersion: 'v1', kind: 'Node',
        metadata: {
          name: n.name, annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
          labels: { type: 'kwok', 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': n.os, 'kubernetes.io/arch': 'amd64', ...(n.taint && n.os === 'linux' ? { agentpool: 'system' } : {}) },
        },
        spec: {
          taints: n.taint ? [n.os === 'linux' ? { key: 'CriticalAddonsOnly', value: 'true', effect: 'NoSchedule' } : { key: 'os', value: 'windows', effect: 'NoSchedule' }] : [],
        },
        status: { allocatable: { cpu: '16', memory: '64Gi', pods: '110' }, capacity: { cpu: '16', memory: '64Gi', pods: '110' } },
      },
    });
  }
}

const helm = (args: string[], kubeconfig: string): ReturnType<typeof tool> => tool('helm', [...args, '--kubeconfig', kubeconfig], {}, 600_000);

async function leftovers(client: RestClient, release: string, namespace: string): Promise<string[]> {
  const out: string[] = [];
  for (const kind of KINDS) {
    const namespaces = kind.namespaced ? [namespace, 'default'] : [undefined];
    for (const ns of namespaces) {
      const items = await listAll<KubeObject>(client, kind, ns, { labelSelector: `app.kubernetes.io/instance=${release}` });
      out.push(...items.map((o) => `${kind.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`));
    }
  }
  const svc = await client.request('GET', objectPath(resources.services, namespace, 'network-observability')).then(() => true, () => false);
  if (svc) out.push('Service/network-observability');
  return out;
}

describe('chart: helm install of every profile into the test control plane', { timeout: 1_800_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    await addNodes(client);
  });

  after(async () => {
    if (client) for (const n of NODES) await client.request('DELETE', objectPath(resources.nodes, undefined, n.name)).catch(() => undefined);
    await cluster?.[Symbol.asyncDispose]();
  });

  for (const p of PROFILES) {
    it(`${p}: one agent per node of its OS, operator ready, nothing left after uninstall`, async () => {
      const ns = `${ID}-${p}`;
      const release = `rel-${p}`;
      const t0 = Date.now();
      const inst = await helm(['install', release, CHART, '-n', ns, '--create-namespace', '-f', profileFile(p), '--wait', '--timeout', '5m'], cluster.kubeconfig);
      assert.equal(inst.code, 0, `helm install: ${inst.stderr}\n${inst.stdout}`);
      const installMs = Date.now() - t0;

      const pods = (await listAll<PodLike>(client, resources.pods, ns)).filter((x) => x.metadata.labels?.['app.kubernetes.io/component'] === 'agent');
      const byOs = (os: string): string[] => pods.filter((x) => x.metadata.labels?.['kubernetes.io/os'] === os).map((x) => x.spec.nodeName ?? '').sort();
      const ours = (os: string): string[] => NODES.filter((n) => n.os === os).map((n) => n.name).sort();
      // exactly one agent on each Linux node (the tainted system pool too), none on nodes without the OS label
      assert.deepEqual(byOs('linux'), ours('linux'));
      assert.deepEqual(byOs('windows'), p === 'windows' ? ours('windows') : []);
      for (const ds of await listAll<KubeObject & { status: { numberReady?: number; desiredNumberScheduled?: number } }>(client, daemonSets, ns)) {
        assert.equal(ds.status.numberReady, ds.status.desiredNumberScheduled, `${ds.metadata.name} not ready`);
      }
      const [op] = await listAll<KubeObject & { spec: { replicas: number }; status: { readyReplicas?: number } }>(client, deploymentsRes, ns);
      assert.ok(op, 'no operator Deployment');
      assert.equal(op.status.readyReplicas, op.spec.replicas, 'operator not ready');
      await client.request('GET', objectPath(resources.services, ns, p === 'coexist' ? 'retina-ts' : 'network-observability'));

      const un = await helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '5m'], cluster.kubeconfig);
      assert.equal(un.code, 0, `helm uninstall: ${un.stderr}`);
      await eventually(`nothing of ${release} left`, 120_000, async () => (await leftovers(client, release, ns)).length === 0);
      // CRDs are kept (Helm's policy for crds/)
      await client.request('GET', objectPath(resources.crds, undefined, 'metricsconfigurations.retina.sh'));
      await client.request('DELETE', objectPath(resources.namespaces, undefined, ns)).catch(() => undefined);
      console.log(JSON.stringify({ profile: p, installMs, linuxAgents: byOs('linux').length, windowsAgents: byOs('windows').length }));
    });
  }

  it('coexist beside Retina\'s own chart in one namespace: both install and run on every node, no host port twice; without the profile ours displace Retina\'s agents (host port 10093)', async () => {
    const ns = `${ID}-beside-retina`; // not the coexist profile's own case's namespace (deleted, maybe still terminating)
    const retinaChart = join(ROOT, 'test/fixtures/retina/standard-chart');
    const pending = async (release: string): Promise<string[]> => (await listAll<PodLike & { status?: { conditions?: { type: string; status: string; message?: string }[] } }>(client, resources.pods, ns, { labelSelector: `app.kubernetes.io/instance=${release}` }))
      .filter((x) => x.status?.phase === 'Pending').map((x) => x.status?.conditions?.find((c) => c.type === 'PodScheduled')?.message ?? '');
    let res = await helm(['install', 'retina', retinaChart, '-n', ns, '--create-namespace', '--set', `namespace=${ns}`, '--set', 'operator.enabled=true', '--set', 'os.windows=false', '--wait', '--timeout', '5m'], cluster.kubeconfig);
    assert.equal(res.code, 0, `Retina's chart: ${res.stderr}`);
    res = await helm(['install', 'retina-ts', CHART, '-n', ns, '-f', profileFile('coexist'), '--wait', '--timeout', '5m'], cluster.kubeconfig);
    assert.equal(res.code, 0, `ours (coexist): ${res.stderr}`);
    for (const ds of await listAll<KubeObject & { status: { numberReady?: number; desiredNumberScheduled?: number } }>(client, daemonSets, ns)) {
      assert.ok((ds.status.desiredNumberScheduled ?? 0) >= 2, `${ds.metadata.name} placed`);
      assert.equal(ds.status.numberReady, ds.status.desiredNumberScheduled, `${ds.metadata.name} not ready`);
    }
    assert.deepEqual(await pending('retina-ts'), []);
    // Host ports per node (host network: a container port is a host port) never taken twice.
    type PortPod = PodLike & { spec: { hostNetwork?: boolean; containers: { ports?: { containerPort: number; hostPort?: number }[] }[] } };
    const clashes = async (): Promise<string[]> => {
      const byNode = new Map<string, string[]>();
      for (const x of await listAll<PortPod>(client, resources.pods, ns)) {
        if (!x.spec.hostNetwork || !x.spec.nodeName) continue;
        for (const c of x.spec.containers) for (const port of c.ports ?? []) byNode.set(`${x.spec.nodeName}:${port.hostPort ?? port.containerPort}`, [...(byNode.get(`${x.spec.nodeName}:${port.hostPort ?? port.containerPort}`) ?? []), x.metadata.name]);
      }
      return [...byNode].filter(([, pods]) => pods.length > 1).map(([k, pods]) => `${k} ${pods.join(',')}`);
    };
    assert.deepEqual(await clashes(), [], 'a host port taken twice on a node');
    // The check can fail: our default profile beside Retina wants Retina's host port 10093, and our agents
    // (system-node-critical) preempt Retina's, which then cannot be placed again.
    res = await helm(['install', 'clash', CHART, '-n', ns, '--set', 'fullnameOverride=clash', '--set', 'service.serviceName=clash', '--set', 'operator.enabled=false', '--wait', '--timeout', '5m'], cluster.kubeconfig);
    assert.equal(res.code, 0, res.stderr);
    const msgs = await eventually('Retina\'s agents displaced', 120_000, async () => {
      const m = (await pending('retina')).filter((x) => /free ports/.test(x));
      return m.length >= 2 && m;
    }, 500);
    assert.ok(msgs.length >= 2);
    for (const rel of ['clash', 'retina-ts', 'retina']) {
      res = await helm(['uninstall', rel, '-n', ns, '--wait', '--timeout', '5m'], cluster.kubeconfig);
      assert.equal(res.code, 0, res.stderr);
    }
    await client.request('DELETE', objectPath(resources.namespaces, undefined, ns)).catch(() => undefined);
  });

  it('monitors: rendered for each API group the cluster serves, and removed by uninstall', async () => {
    // Stand-in CRDs for the two groups (the real ones are the Prometheus Operator's and Azure Monitor's).
    const groups = ['monitoring.coreos.com', 'azmonitoring.coreos.com'];
    const crd = (group: string, kind: string): unknown => ({
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
      metadata: { name: `${kind.toLowerCase()}s.${group}` },
      spec: {
        group, scope: 'Namespaced', names: { kind, plural: `${kind.toLowerCase()}s`, singular: kind.toLowerCase(), listKind: `${kind}List` },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    // only the Azure Monitor group first: the other one must not be rendered
    for (const kind of ['ServiceMonitor', 'PodMonitor']) await client.request('POST', collectionPath(resources.crds), { body: crd('azmonitoring.coreos.com', kind) });
    const monitors = (group: string, kind: string): ResourceRef => r(group, `${kind.toLowerCase()}s`, kind, true);
    const ns = `${ID}-monitors`;
    const names = async (): Promise<string[]> => {
      const out: string[] = [];
      for (const g of groups) {
        for (const kind of ['ServiceMonitor', 'PodMonitor']) {
          const items = await listAll<KubeObject>(client, monitors(g, kind), ns).catch(() => []);
          out.push(...items.map((o) => `${g}/${kind}/${o.metadata.name}`));
        }
      }
      return out.sort();
    };
    await eventually('azmonitoring CRDs served', 30_000, async () => (await client.request('GET', '/apis/azmonitoring.coreos.com/v1').then(() => true, () => false)));
    const set = ['--set', 'monitoring.serviceMonitor.enabled=true', '--set', 'monitoring.operatorPodMonitor.enabled=true'];
    let res = await helm(['install', 'rel-mon', CHART, '-n', ns, '--create-namespace', '-f', profileFile('basic'), ...set, '--wait', '--timeout', '5m'], cluster.kubeconfig);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(await names(), ['azmonitoring.coreos.com/PodMonitor/rel-mon-retina-operator', 'azmonitoring.coreos.com/ServiceMonitor/rel-mon-retina-agent']);
    // the Prometheus Operator's group appears: an upgrade renders its monitors too
    for (const kind of ['ServiceMonitor', 'PodMonitor']) await client.request('POST', collectionPath(resources.crds), { body: crd('monitoring.coreos.com', kind) });
    await eventually('monitoring CRDs served', 30_000, async () => (await client.request('GET', '/apis/monitoring.coreos.com/v1').then(() => true, () => false)));
    res = await helm(['upgrade', 'rel-mon', CHART, '-n', ns, '-f', profileFile('basic'), ...set, '--wait', '--timeout', '5m'], cluster.kubeconfig);
    assert.equal(res.code, 0, res.stderr);
    assert.equal((await names()).length, 4);
    res = await helm(['uninstall', 'rel-mon', '-n', ns, '--wait'], cluster.kubeconfig);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(await names(), []);
    await eventually('nothing of rel-mon left', 120_000, async () => (await leftovers(client, 'rel-mon', ns)).length === 0);
    for (const g of groups) for (const kind of ['servicemonitors', 'podmonitors']) await client.request('DELETE', objectPath(resources.crds, undefined, `${kind}.${g}`)).catch(() => undefined);
    await client.request('DELETE', objectPath(resources.namespaces, undefined, ns)).catch(() => undefined);
  });

  it('helm install with a typo in values fails with the key named, and installs nothing', async () => {
    const ns = `${ID}-typo`;
    const res = await helm(['install', 'rel-typo', CHART, '-n', ns, '--create-namespace', '--set', 'agent.linux.tolerationz[0].operator=Exists'], cluster.kubeconfig);
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /tolerationz/);
    assert.deepEqual(await leftovers(client, 'rel-typo', ns), []);
    await client.request('DELETE', objectPath(resources.namespaces, undefined, ns)).catch(() => undefined);
  });
});
