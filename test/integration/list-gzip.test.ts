/**
 * The agent's initial state by LIST pages, compressed: kube-apiserver gzips an answer over 128 KiB
 * when the client accepts it (it never compresses a watch stream, so WatchList's initial events
 * cross the wire whole). A page of 400 RetinaEndpoints arrives several times smaller than its JSON,
 * and the agent's watch layer fills the IP cache from those pages exactly as from a stream
 * (bench/k8s/README.md, agents at scale: 150 000 endpoints, 12-17x fewer bytes per agent).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IpCache } from '../../src/cache/index.js';
import { collectionPath, createRestClient, loadRestConfig, resources, startAgentWatch, type KubeList, type RetinaEndpoint } from '../../src/k8s/index.js';
import { createEndpoints, endpointBody } from '../../bench/k8s/endpoints.js';
import { createNamespace, deleteNamespace, eventually, startCluster, type Cluster } from './harness.js';
import { uniqueId } from './operator-helpers.js';

const N = 400;

describe('LIST pages arrive gzip-compressed and fill the IP cache', () => {
  let cluster: Cluster;
  const ns = uniqueId('list-gzip');
  before(async () => {
    cluster = await startCluster();
    await createNamespace(cluster.client, ns);
    await createEndpoints(cluster.client, ns, N);
  });
  after(async () => {
    await deleteNamespace(cluster.client, ns);
    await cluster[Symbol.asyncDispose]();
  });

  it('a page of 400 RetinaEndpoints crosses the wire compressed, and decodes whole', async () => {
    const c = createRestClient(await loadRestConfig({ kubeconfig: cluster.kubeconfig, env: {} }));
    try {
      const page = await c.request<KubeList<RetinaEndpoint>>('GET', collectionPath(resources.retinaEndpoints, ns), { query: { limit: 500 } });
      assert.equal(page.items.length, N);
      const json = Buffer.byteLength(JSON.stringify(page));
      assert.ok(c.bytesReceived() * 4 < json, `${c.bytesReceived()} bytes on the wire for ${json} bytes of JSON`);
      assert.deepEqual(page.items.find((x) => x.metadata.name === endpointBody(ns, 7).metadata.name)?.spec, endpointBody(ns, 7).spec);
    } finally {
      c.close();
    }
  });

  it('the watch layer lists in compressed pages (remote context) and holds every endpoint', async () => {
    const c = createRestClient(await loadRestConfig({ kubeconfig: cluster.kubeconfig, env: {} }));
    const cache = new IpCache();
    const watch = startAgentWatch({ client: c, cache, remoteContext: true, initialState: 'list' });
    try {
      await watch.waitForSync();
      await eventually('every endpoint of the namespace cached', 30_000, () => [...Array(N).keys()].every((i) => cache.pod(ns, endpointBody(ns, i).metadata.name) !== undefined));
      const e = endpointBody(ns, 8);
      const got = cache.lookup(e.spec.podIP);
      assert.equal(got?.kind === 'pod' && got.name, e.metadata.name);
      assert.equal(cache.lookup((e.spec.podIPs as string[])[1] as string)?.kind, 'pod', 'the IPv6 address of a dual-stack endpoint');
      const re = watch.stats().find((s) => s.resource.startsWith('retinaendpoints'));
      assert.equal(re?.lists, 1);
    } finally {
      await watch[Symbol.asyncDispose]();
      c.close();
    }
  });
});
