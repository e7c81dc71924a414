/** Shared by the benchmarks that need a big cluster: `n` RetinaEndpoints of 200 services, 48 requests at a time. */
import { collectionPath, resources, type RetinaEndpoint } from '../../src/k8s/index.js';
import type { Cluster } from '../../test/integration/harness.js';

const hex = (n: number, w: number): string => n.toString(16).padStart(w, '0');

/** Creates `n` RetinaEndpoints in `ns` (one in four dual-stack), named and labelled like ReplicaSet pods. */
export async function createEndpoints(client: Cluster['client'], ns: string, n: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: 48 }, async () => {
    while (next < n) {
      const i = next++;
      const app = `svc${i % 200}`;
      const rs = `${app}-${hex((i % 200) * 7919, 8).replace(/[0-9]/g, (d) => 'bcdfghjklm'[Number(d)] as string)}`;
      const ip = `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
      const body: RetinaEndpoint = {
        apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: `${rs}-${hex(i, 5)}`, namespace: ns },
        spec: {
          podIP: ip, podIPs: i % 4 === 0 ? [ip, `fd00:100::${hex(i, 4)}`] : [ip], nodeIP: `172.18.${i % 50}.10`,
          containers: [{ name: 'app', id: `containerd://${hex(i * 2654435761, 16)}${hex(i, 48)}` }],
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs }],
          labels: { app, 'app.kubernetes.io/name': app, version: 'v1' },
        },
      };
      await client.request('POST', collectionPath(resources.retinaEndpoints, ns), { body });
    }
  }));
}
