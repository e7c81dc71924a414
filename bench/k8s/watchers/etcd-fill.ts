/**
 * 150 000 RetinaEndpoints in minutes: written straight into etcd (its JSON gateway, 128 puts per
 * transaction, etcd's default --max-txn-ops), as kube-apiserver stores custom resources there
 * (`/registry/<group>/<plural>/<namespace>/<name>`, the object as JSON without resourceVersion).
 * The API server's watch cache reads them from etcd's watch like any write. Through the API the
 * same takes over an hour on this machine (about 40 POSTs a second while other builds run: bench
 * README). Each carries a managedFields entry like the operator's writes, so events are as large.
 */
import { randomUUID } from 'node:crypto';
import { ETCD } from '../../../test/integration/harness.js';
import { endpointBody, sliceBody } from '../endpoints.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

type Stored = { metadata: { name: string; namespace?: string } };

/**
 * Puts objects `from`..`to - 1` (made by `make`) of `ns` into etcd as kube-apiserver stores custom
 * resources of `plural`, each with the managedFields entry (`fieldsV1`) of the operator's writes;
 * `batch` puts per transaction, `parallel` transactions at a time.
 */
async function putInEtcd(plural: string, ns: string, from: number, to: number, batch: number, parallel: number, make: (i: number) => Stored, fieldsV1: unknown): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  let next = from;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < to) {
      const first = next;
      next = Math.min(to, next + batch);
      const success = [];
      for (let i = first; i < next; i++) {
        const o = make(i);
        const stored = {
          ...o,
          metadata: {
            ...o.metadata, uid: randomUUID(), creationTimestamp: now, generation: 1,
            managedFields: [{ apiVersion: 'retina.sh/v1alpha1', fieldsType: 'FieldsV1', fieldsV1, manager: 'retina-operator', operation: 'Update', time: now }],
          },
        };
        success.push({ requestPut: { key: b64(`/registry/retina.sh/${plural}/${ns}/${o.metadata.name}`), value: b64(JSON.stringify(stored)) } });
      }
      const r = await fetch(`${ETCD}/v3/kv/txn`, { method: 'POST', body: JSON.stringify({ success }) });
      if (!r.ok) throw new Error(`etcd txn failed: ${r.status} ${await r.text()}`);
    }
  }));
}

/** Puts endpoints `from`..`n - 1` of `ns` into etcd; `parallel` transactions at a time. */
export async function putEndpointsInEtcd(ns: string, n: number, from = 0, parallel = 4): Promise<void> {
  const fields = { 'f:spec': { '.': {}, 'f:containers': {}, 'f:labels': { '.': {}, 'f:app': {}, 'f:app.kubernetes.io/name': {}, 'f:version': {} }, 'f:nodeIP': {}, 'f:ownerReferences': {}, 'f:podIP': {}, 'f:podIPs': {} } };
  await putInEtcd('retinaendpoints', ns, from, n, 128, parallel, (i) => endpointBody(ns, i), fields);
}

/**
 * The same endpoints `0..n - 1` as RetinaEndpointSlices of `size` (slice k holds endpoints k*size..),
 * each with the managedFields entry of the operator's merge patches.
 */
export async function putSlicesInEtcd(ns: string, n: number, size: number, parallel = 4): Promise<number> {
  const slices = Math.ceil(n / size);
  await putInEtcd('retinaendpointslices', ns, 0, slices, 16, parallel, (k) => sliceBody(ns, k, size, n), { 'f:endpoints': {} });
  return slices;
}

/** Deletes every RetinaEndpointSlice in etcd (a run with another slice size left its own). */
export async function deleteSlicesInEtcd(): Promise<void> {
  const prefix = '/registry/retina.sh/retinaendpointslices/';
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const r = await fetch(`${ETCD}/v3/kv/deleterange`, { method: 'POST', body: JSON.stringify({ key: b64(prefix), range_end: b64(end) }) });
  if (!r.ok) throw new Error(`etcd delete failed: ${r.status} ${await r.text()}`);
}
