/**
 * Kubernetes side of the pod-flows test: a Node that kwok does not manage (no kwok annotation,
 * tainted so nothing else lands there), Deployments whose pods are pinned to it (spec.nodeName, so
 * the scheduler and kwok leave them alone), and the pod status a kubelet would write — phase
 * Running, podIP/podIPs (IPv4 and IPv6) of the test's network namespaces, hostIP — PATCHed through
 * the status subresource. The ReplicaSet controller owns the pods, so their workload is real.
 */
import { collectionPath, objectPath, resources, type PodWire, type RestClient, type RetinaEndpoint } from '../../src/k8s/index.js';
import { createNamespace, deployments, eventually, listAll } from './harness.js';
import type { PodNet, PodNs } from './pod-flows-net.js';

export const NODE_IP = '172.18.99.1';

export async function createNode(client: RestClient, name: string, ip = NODE_IP): Promise<void> {
  await client.request('POST', collectionPath(resources.nodes), {
    body: {
      apiVersion: 'v1', kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name, 'topology.kubernetes.io/zone': 'zone-pf' } },
      spec: { taints: [{ key: 'retina-ts/pod-flows', value: 'true', effect: 'NoSchedule' }] },
      status: { addresses: [{ type: 'InternalIP', address: ip }, { type: 'Hostname', address: name }] },
    },
  });
}

export async function deleteNode(client: RestClient, name: string): Promise<void> {
  await client.request('DELETE', objectPath(resources.nodes, undefined, name)).catch(() => undefined);
}

/** A one-replica Deployment whose pod runs on `node` (not scheduled, not run by kwok). */
export async function createPinnedDeployment(client: RestClient, namespace: string, name: string, node: string): Promise<void> {
  await client.request('POST', collectionPath(deployments, namespace), {
    body: {
      apiVersion: 'apps/v1', kind: 'Deployment',
      metadata: { name, namespace },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            nodeName: node,
            containers: [{ name: 'main', image: 'registry.invalid/pod-flows:1' }],
            tolerations: [{ key: 'retina-ts/pod-flows', operator: 'Exists', effect: 'NoSchedule' }],
            terminationGracePeriodSeconds: 0,
          },
        },
      },
    },
  });
}

/** Waits for the Deployment's pod and gives it the status a kubelet would: Running with these IPs. */
export async function runPodWithIps(client: RestClient, namespace: string, app: string, ips: readonly string[]): Promise<PodWire> {
  const pod = await eventually(`pod of ${namespace}/${app}`, 60_000, async () => {
    const ps = await listAll<PodWire>(client, resources.pods, namespace, { labelSelector: `app=${app}` });
    return ps.find((p) => !p.metadata.deletionTimestamp);
  });
  const now = new Date().toISOString();
  return client.request<PodWire>('PATCH', objectPath(resources.pods, namespace, pod.metadata.name, 'status'), {
    contentType: 'application/merge-patch+json',
    body: {
      status: {
        phase: 'Running', podIP: ips[0], podIPs: ips.map((ip) => ({ ip })), hostIP: NODE_IP, hostIPs: [{ ip: NODE_IP }], startTime: now,
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }, { type: 'ContainersReady', status: 'True', lastTransitionTime: now }],
        containerStatuses: [{ name: 'main', image: 'registry.invalid/pod-flows:1', imageID: '', ready: true, restartCount: 0, started: true, state: { running: { startedAt: now } }, containerID: `containerd://${pod.metadata.uid ?? ''}` }],
      },
    },
  });
}

/** A test's pod: its network namespace and its Pod's name and namespace. */
export interface TestPod {
  readonly ns: PodNs;
  readonly name: string;
  readonly namespace: string;
}

/**
 * The pods of a test, on `node`: the layout's Kubernetes namespaces, then for each `[app, namespace,
 * host]` a network namespace on `net`'s bridge at `${ip4Net}.${host}` and `${ip6Net}${host}`, a
 * Deployment pinned to the node, and its pod Running with those IPs.
 */
export async function addPods<A extends string>(client: RestClient, net: PodNet, node: string, layout: ReadonlyArray<readonly [A, string, number]>, ip4Net: string, ip6Net: string): Promise<Record<A, TestPod>> {
  for (const namespace of new Set(layout.map(([, ns]) => ns))) await createNamespace(client, namespace);
  const pods = {} as Record<A, TestPod>;
  for (const [app, namespace, host] of layout) {
    const ns = net.add(app, `${ip4Net}.${host}`, `${ip6Net}${host}`);
    await createPinnedDeployment(client, namespace, app, node);
    const pod = await runPodWithIps(client, namespace, app, [ns.ip4, ns.ip6]);
    pods[app] = { ns, name: pod.metadata.name, namespace };
  }
  return pods;
}

/** Waits until the operator has made each pod's RetinaEndpoint, holding `ip(pod)`. */
export async function waitForEndpoints(client: RestClient, pods: Readonly<Record<string, TestPod>>, ip: (p: TestPod) => string): Promise<void> {
  const namespaces = [...new Set(Object.values(pods).map((p) => p.namespace))];
  await eventually(`RetinaEndpoints of the ${Object.keys(pods).length} pods`, 60_000, async () => {
    const res = (await Promise.all(namespaces.map((ns) => listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns)))).flat();
    return Object.values(pods).every((p) => res.some((r) => r.metadata.name === p.name && r.spec.podIPs?.includes(ip(p))));
  }, 500);
}
