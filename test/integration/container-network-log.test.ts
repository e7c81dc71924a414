/**
 * ContainerNetworkLog on a real API server: the operator installs the CRD (acn.azure.com/v1alpha1,
 * ACNS's schema) and writes each resource's status (CONFIGURED, or FAILED with the bad field named);
 * the API server itself refuses what the schema excludes; the agent's selection, fed by a real
 * informer, follows resources as they come, change and go (a union; nothing without a valid one).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createContainerNetworkLogSelection, type ContainerNetworkLogSelection } from '../../src/export/index.js';
import { loadFlowEnums } from '../../src/flow/hubble/index.js';
import {
  collectionPath, createInformerFactory, isApiError, objectPath, resources,
  type ContainerNetworkLog, type InformerFactory, type RestClient,
} from '../../src/k8s/index.js';
import { eventually, ROOT, startCluster, type Cluster } from './harness.js';
import { startOperator, testLog, uniqueId } from './operator-helpers.js';

const ENUMS = loadFlowEnums(fileURLToPath(new URL('proto/hubble', `file://${ROOT}`)));
const CNL = resources.containerNetworkLogs;

describe('ContainerNetworkLog: CRD, operator status, agent selection', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let operator: Awaited<ReturnType<typeof startOperator>>;
  let factory: InformerFactory;
  let selection: ContainerNetworkLogSelection;
  const id = uniqueId('cnl');
  const names = { a: `${id}-a`, b: `${id}-b`, bad: `${id}-bad` };
  let changes = 0;

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('retina-op') });
    factory = createInformerFactory({ client, log: testLog('agent') });
    selection = createContainerNetworkLogSelection({ log: testLog('agent'), enums: ENUMS });
    selection.onChange(() => changes++);
    selection.watch(factory);
  });

  after(async () => {
    selection?.[Symbol.dispose]();
    await factory?.[Symbol.asyncDispose]();
    for (const n of Object.values(names)) await client?.request('DELETE', objectPath(CNL, undefined, n)).catch(() => undefined);
    await operator?.[Symbol.asyncDispose]();
    await cluster?.[Symbol.asyncDispose]();
  });

  const apply = (name: string, spec: unknown): Promise<unknown> =>
    client.request('POST', collectionPath(CNL), { body: { apiVersion: 'acn.azure.com/v1alpha1', kind: 'ContainerNetworkLog', metadata: { name }, spec } });
  const get = (name: string): Promise<ContainerNetworkLog> => client.request<ContainerNetworkLog>('GET', objectPath(CNL, undefined, name));
  const status = (name: string, state: string, generation = 1): Promise<ContainerNetworkLog> =>
    eventually(`${name} ${state}`, 30_000, async () => {
      const c = await get(name);
      return c.status?.state === state && c.status.observedGeneration === generation && c;
    });
  /** The selection's filters that came from our resources (other tests' resources are none here, but be exact). */
  const allow = (): unknown[] => (selection.current().active ? [...selection.current().allow] : []);

  it('the CRD is installed and Established with the schema: the API server refuses what the schema excludes', async () => {
    const crd = await client.request<{ spec: { scope: string; names: { kind: string; shortNames: string[] } } }>('GET', objectPath(resources.crds, undefined, 'containernetworklogs.acn.azure.com'));
    assert.equal(crd.spec.scope, 'Cluster');
    assert.equal(crd.spec.names.kind, 'ContainerNetworkLog');
    const refused = async (spec: unknown, field: RegExp): Promise<void> => {
      await assert.rejects(apply(`${id}-x`, spec), (e: unknown) => {
        assert.ok(isApiError(e, 422), String(e));
        assert.match((e as Error).message, field);
        return true;
      });
    };
    await refused({}, /spec\.includefilters: Required value/);
    await refused({ includefilters: [] }, /spec\.includefilters: Invalid value: .*should have at least 1 items/);
    await refused({ includefilters: [{ protocol: ['icmp'] }] }, /spec\.includefilters\[0\]\.protocol\[0\]: Unsupported value: "icmp"/);
    await refused({ includefilters: [{ verdict: ['DROPPED'] }] }, /spec\.includefilters\[0\]\.verdict\[0\]: Unsupported value: "DROPPED"/);
    await refused({ includefilters: [{ from: { namespacedPod: ['no-slash'] } }] }, /spec\.includefilters\[0\]\.from\.namespacedPod\[0\]: Invalid value/);
    await refused({ includefilters: [{ to: { ip: ['not an ip'] } }] }, /spec\.includefilters\[0\]\.to\.ip\[0\]: Invalid value/);
  });

  it('nothing is selected before any resource; a valid one is CONFIGURED and selected', async () => {
    await eventually('selection synced', 20_000, () => changes === 0 && selection.resources().length === 0 && factory.stats().every((s) => s.synced));
    assert.equal(selection.current().active, false);
    await apply(names.a, { includefilters: [{ name: 'shop-frontend', from: { namespacedPod: ['shop/frontend-'] }, protocol: ['tcp'], verdict: ['forwarded'] }] });
    const a = await status(names.a, 'CONFIGURED');
    const cond = a.status?.conditions?.find((c) => c.type === 'Accepted');
    assert.equal(cond?.status, 'True');
    assert.equal(cond?.reason, 'Valid');
    assert.match(a.status?.timestamp ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    await eventually('a selected', 20_000, () => selection.current().active);
    assert.deepEqual(allow(), [{ source_pod: ['shop/frontend-'], protocol: ['tcp'], verdict: ['FORWARDED'] }]);
  });

  it('an invalid one the schema lets through is FAILED with the field named, and skipped by the agent', async () => {
    const before = changes;
    await apply(names.bad, { includefilters: [{ to: { namespacedPod: ['shop/'] } }, { from: { ip: ['10.0.0.300', '10.0.0.0/8'] } }] });
    const bad = await status(names.bad, 'FAILED');
    assert.equal(bad.status?.message, 'spec.includefilters[1].from.ip[0]: "10.0.0.300" is not an IP or CIDR');
    const cond = bad.status?.conditions?.find((c) => c.type === 'Accepted');
    assert.equal(cond?.status, 'False');
    assert.equal(cond?.reason, 'Invalid');
    assert.equal(cond?.message, bad.status?.message);
    await eventually('the agent saw it', 20_000, () => selection.resources().some((r) => r.name === names.bad));
    const r = selection.resources().find((x) => x.name === names.bad);
    assert.equal(r?.ok, false);
    assert.equal(changes, before, 'the selection in force did not change');
    assert.deepEqual(allow(), [{ source_pod: ['shop/frontend-'], protocol: ['tcp'], verdict: ['FORWARDED'] }]);
  });

  it('resources combine as a union; fixing the invalid one makes it CONFIGURED and selected; deleting all selects nothing', async () => {
    await apply(names.b, { includefilters: [{ to: { labelSelector: { matchLabels: { 'k8s.io/namespace': 'shop', app: 'backend' } } }, verdict: ['dropped'] }] });
    await status(names.b, 'CONFIGURED');
    await eventually('a and b selected', 20_000, () => allow().length === 2);
    assert.deepEqual(allow(), [
      { source_pod: ['shop/frontend-'], protocol: ['tcp'], verdict: ['FORWARDED'] },
      { destination_pod: ['shop/'], destination_label: ['k8s:app=backend'], verdict: ['DROPPED'] },
    ]);

    // Fix the bad one (merge patch of the spec: generation 2).
    await client.request('PATCH', objectPath(CNL, undefined, names.bad), {
      contentType: 'application/merge-patch+json', body: { spec: { includefilters: [{ to: { namespacedPod: ['shop/'] } }, { from: { ip: ['10.0.0.30', '10.0.0.0/8'] } }] } },
    });
    const fixed = await status(names.bad, 'CONFIGURED', 2);
    assert.equal(fixed.status?.message, '');
    await eventually('the fixed one selected', 20_000, () => allow().length === 4);
    assert.deepEqual(allow()[0], { source_pod: ['shop/frontend-'], protocol: ['tcp'], verdict: ['FORWARDED'] }, 'in name order: a, b, bad');
    assert.deepEqual(allow().slice(2), [{ destination_pod: ['shop/'] }, { source_ip: ['10.0.0.30', '10.0.0.0/8'] }]);

    for (const n of [names.a, names.bad]) await client.request('DELETE', objectPath(CNL, undefined, n));
    await eventually('only b left', 20_000, () => allow().length === 1);
    await client.request('DELETE', objectPath(CNL, undefined, names.b));
    await eventually('nothing selected', 20_000, () => !selection.current().active);
    assert.deepEqual(selection.resources(), []);
  });
});
