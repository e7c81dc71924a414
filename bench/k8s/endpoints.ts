/** Shared by the benchmarks that need a big cluster: `n` RetinaEndpoints of 200 services, 48 requests at a time. */
import { normalizeIp } from '../../src/cache/index.js';
import { collectionPath, isApiError, resources, type RetinaEndpoint, type RetinaEndpointSlice, type RetinaEndpointSliceEntry } from '../../src/k8s/index.js';
import type { Cluster } from '../../test/integration/harness.js';

const hex = (n: number, w: number): string => n.toString(16).padStart(w, '0');

/** The IPv6 address of endpoint `i` (one in four is dual-stack): unique up to 2^20 endpoints; canonical, as a kubelet reports it. */
const v6 = (i: number): string => normalizeIp(i < 0x10000 ? `fd00:100::${hex(i, 4)}` : `fd00:100::${(i >> 16).toString(16)}:${hex(i & 0xffff, 4)}`);

/** The ReplicaSet-like name of endpoint `i` and its app label. */
export function endpointName(i: number): { name: string; app: string; rs: string } {
  const app = `svc${i % 200}`;
  const rs = `${app}-${hex((i % 200) * 7919, 8).replace(/[0-9]/g, (d) => 'bcdfghjklm'[Number(d)] as string)}`;
  return { name: `${rs}-${hex(i, 5)}`, app, rs };
}

/** RetinaEndpoint number `i` of namespace `ns`, as the operator would write it for a ReplicaSet's pod. */
export function endpointBody(ns: string, i: number): RetinaEndpoint {
  const { name, app, rs } = endpointName(i);
  const ip = `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
  return {
    apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name, namespace: ns },
    spec: {
      podIP: ip, podIPs: i % 4 === 0 ? [ip, v6(i)] : [ip], nodeIP: `172.18.${i % 50}.10`,
      containers: [{ name: 'app', id: `containerd://${hex(i * 2654435761, 16)}${hex(i, 48)}` }],
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs }],
      labels: { app, 'app.kubernetes.io/name': app, version: 'v1' },
    },
  };
}

/**
 * Creates RetinaEndpoints number `from` to `n - 1` in `ns` (one in four dual-stack), named and
 * labelled like ReplicaSet pods: a run can add to what an earlier one left (one that exists already is
 * left as it is).
 */
export async function createEndpoints(client: Cluster['client'], ns: string, n: number, from = 0): Promise<void> {
  let next = from;
  await Promise.all(Array.from({ length: 48 }, async () => {
    while (next < n) {
      const i = next++;
      const body = endpointBody(ns, i);
      await client.request('POST', collectionPath(resources.retinaEndpoints, ns), { body }).catch((e: unknown) => {
        if (!isApiError(e, 409)) throw e;
      });
    }
  }));
}

/** Endpoint `i` as a RetinaEndpointSlice entry (what the operator writes for the same pod). */
export function sliceEntryOf(i: number): RetinaEndpointSliceEntry {
  const { name } = endpointName(i);
  const s = endpointBody('', i).spec;
  return { name, podIPs: s.podIPs ?? [s.podIP], nodeIP: s.nodeIP as string, ownerReferences: (s.ownerReferences ?? []).map((o) => ({ kind: o.kind, name: o.name })), labels: { ...s.labels } };
}

/** The name of slice `k`. */
export const sliceName = (k: number): string => `res-${hex(k, 10)}`;

/** Slice `k` of namespace `ns`: endpoints k*size .. min(n, (k+1)*size) - 1. */
export function sliceBody(ns: string, k: number, size: number, n: number): RetinaEndpointSlice {
  const endpoints: RetinaEndpointSliceEntry[] = [];
  for (let i = k * size; i < Math.min(n, (k + 1) * size); i++) endpoints.push(sliceEntryOf(i));
  return { apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpointSlice', metadata: { name: sliceName(k), namespace: ns }, endpoints };
}
