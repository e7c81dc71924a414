/**
 * An agent set to read RetinaEndpointSlices in a cluster whose operator writes only RetinaEndpoints
 * (the two configured apart), against a real API server: the agent knows no pod, and says why in a
 * warning naming the setting; once a slice appears it knows the pod and says that too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IpCache } from '../../src/cache/index.js';
import { SLICES_NOT_WRITTEN } from '../../src/k8s/agent-watch.js';
import { collectionPath, resources, startAgentWatch, type AgentWatch, type RestClient } from '../../src/k8s/index.js';
import type { Logger } from '../../src/log/index.js';
import { installCrds } from '../../src/operator/index.js';
import { createNamespace, deleteNamespace, eventually, startCluster, type Cluster } from './harness.js';
import { CRD_DIR, testLog, uniqueId } from './operator-helpers.js';

describe('agent reading RetinaEndpointSlices that the operator does not write', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let watch: AgentWatch | undefined;
  const ns = uniqueId('unwritten');
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}): void => void lines.push({ level, msg, fields });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    await installCrds({ client, dir: CRD_DIR, log: testLog('crd'), only: ['RetinaEndpoint', 'RetinaEndpointSlice'] });
    await createNamespace(client, ns);
  });

  after(async () => {
    await watch?.[Symbol.asyncDispose]();
    if (client) await deleteNamespace(client, ns);
    await cluster?.[Symbol.asyncDispose]();
  });

  it('warns, naming retinaEndpointSlices, while only RetinaEndpoints exist; a slice brings the pod and an info line', async () => {
    await client.request('POST', collectionPath(resources.retinaEndpoints, ns), {
      body: { apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: 'web-0', namespace: ns }, spec: { podIP: '10.77.0.5' } },
    });
    const cache = new IpCache();
    watch = startAgentWatch({ client, cache, remoteContext: true, endpointSlices: true, log, slicesCheckMs: 300 });
    const warn = await eventually('the warning', 30_000, async () => lines.find((l) => l.level === 'warn' && l.msg === SLICES_NOT_WRITTEN), 100);
    assert.equal(warn.fields['setting'], 'retinaEndpointSlices');
    assert.match(String(warn.fields['why']), /operator writes only RetinaEndpoints/);
    assert.equal(cache.lookup('10.77.0.5'), undefined, 'the pod is unknown to an agent reading slices');
    await new Promise((r) => setTimeout(r, 1000)); // three more looks
    assert.equal(lines.filter((l) => l.msg === SLICES_NOT_WRITTEN).length, 1, 'warned once');

    await client.request('POST', collectionPath(resources.retinaEndpointSlices, ns), {
      body: { apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpointSlice', metadata: { name: 's-0', namespace: ns }, endpoints: [{ name: 'web-0', podIPs: ['10.77.0.5'] }] },
    });
    await eventually('the pod from the slice', 30_000, async () => cache.lookup('10.77.0.5')?.kind === 'pod', 100);
    await eventually('the info line', 30_000, async () => lines.some((l) => l.level === 'info' && l.msg === 'RetinaEndpointSlices exist now: pods are known again'), 100);
  });
});
