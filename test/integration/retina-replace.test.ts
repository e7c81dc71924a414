/**
 * Replacing a running Microsoft Retina in place (docs/migrating-from-retina.md): the cluster holds
 * Retina's older CRDs (test/fixtures/retina/crds-old, Retina's January 2025 chart, SOURCES.md) and
 * objects Retina's operator and users made: RetinaEndpoints of running pods, a MetricsConfiguration, a
 * finished Capture. `helm uninstall` of Retina leaves CRDs and custom resources (Helm's CRD policy);
 * our operator then starts with installCRDs: it upgrades the three CRDs in place, adopts the
 * RetinaEndpoints (same objects, now owned by their Pods and in our shape), accepts the
 * MetricsConfiguration, and leaves the finished Capture as it was (no new capture Jobs). Nothing is
 * lost: every object keeps its uid, and fields only the new CRDs have (MetricsConfiguration ttl,
 * Capture cleanUpAfterUpload), pruned by the old schema, are kept after the upgrade.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { collectionPath, isApiError, objectPath, resources, type PodWire, type RestClient, type RetinaEndpoint } from '../../src/k8s/index.js';
import { ROOT, createNamespace, deleteNamespace, deployment, deployments, eligible, eventually, listAll, startCluster, type Cluster } from './harness.js';
import { installCrds } from '../../src/operator/index.js';
import { converged, startOperator, testLog, uniqueId } from './operator-helpers.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const OLD = join(ROOT, 'test/fixtures/retina/crds-old');
const OURS = join(ROOT, 'charts/retina/crds');
const CRDS = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', kind: 'CustomResourceDefinition', namespaced: false } as const;
const JOBS = { group: 'batch', version: 'v1', plural: 'jobs', kind: 'Job', namespaced: true } as const;

const crdFiles = (dir: string): Obj[] => readdirSync(dir).filter((f) => f.endsWith('.yaml')).map((f) => parse(readFileSync(join(dir, f), 'utf8')) as Obj);
const contextProps = (crd: Obj): string[] => Object.keys(crd['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties']['contextOptions']['items']['properties']).sort();

describe('replace a running Retina in place: older CRDs and objects, then our operator', { timeout: 600_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
  const ns = uniqueId('retina-old');

  async function removeCrds(): Promise<void> {
    const names = [...crdFiles(OLD), ...crdFiles(OURS)].map((c) => c['metadata']['name'] as string);
    for (const n of new Set(names)) await client.request('DELETE', objectPath(CRDS, undefined, n)).catch((e: unknown) => { if (!isApiError(e, 404)) throw e; });
    await eventually('retina.sh CRDs gone', 60_000, async () => {
      for (const n of names) if (await client.request('GET', objectPath(CRDS, undefined, n)).then(() => true, () => false)) return false;
      return true;
    });
  }

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    await removeCrds();
    for (const crd of crdFiles(OLD)) await client.request('POST', collectionPath(CRDS), { body: crd });
    await eventually('Retina\'s CRDs served', 60_000, async () => client.request('GET', '/apis/retina.sh/v1alpha1').then(() => true, () => false));
    for (const crd of crdFiles(OLD)) {
      await eventually(`${crd['metadata']['name']} established`, 30_000, async () => {
        const c = await client.request<Obj>('GET', objectPath(CRDS, undefined, crd['metadata']['name'] as string));
        return (c['status']?.['conditions'] as Obj[] | undefined)?.some((x) => x['type'] === 'Established' && x['status'] === 'True');
      });
    }
    await createNamespace(client, ns);
  });

  after(async () => {
    await operator?.[Symbol.asyncDispose]();
    if (client) {
      await deleteNamespace(client, ns);
      // Leave the cluster as the harness made it: our CRDs (whatever happened above), not Retina's extra one.
      await installCrds({ client, dir: OURS, log: testLog('crds') });
      await client.request('DELETE', objectPath(CRDS, undefined, 'tracesconfigurations.retina.sh')).catch(() => undefined);
    }
    await cluster?.[Symbol.asyncDispose]();
  });

  it('uninstall Retina, install ours: CRDs upgraded, RetinaEndpoints adopted, MetricsConfiguration accepted, Capture kept, nothing lost', async () => {
    // What Retina's operator and its users left: two running pods with Retina-made RetinaEndpoints ...
    await client.request('POST', collectionPath(deployments, ns), { body: deployment(ns, 'web', 2, { tier: 'front' }) });
    const pods = await eventually('2 running pods', 120_000, async () => {
      const p = (await listAll<PodWire>(client, resources.pods, ns)).filter(eligible);
      return p.length === 2 && p;
    }, 500);
    for (const p of pods) {
      // Retina's shape (pkg/controllers/operator/retinaendpoint): spec only, no owner on the object.
      await client.request('POST', collectionPath(resources.retinaEndpoints, ns), { body: {
        apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: p.metadata.name, namespace: ns },
        spec: { podIP: p.status?.podIP, podIPs: [p.status?.podIP], nodeIP: p.status?.hostIP, containers: [{ name: 'web', id: 'containerd://old' }],
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: p.metadata.ownerReferences?.[0]?.name }], labels: { app: 'web', 'pod-template-hash': 'x' }, annotations: {} },
      } });
    }
    // ... a MetricsConfiguration (its ttl is pruned by the old schema) ...
    const mc = await client.request<Obj>('POST', collectionPath(resources.metricsConfigurations), { body: {
      apiVersion: 'retina.sh/v1alpha1', kind: 'MetricsConfiguration', metadata: { name: uniqueId('mc') },
      spec: { contextOptions: [{ metricName: 'drop_count', sourceLabels: ['ip', 'podname'], destinationLabels: ['ip'], ttl: '10m' }], namespaces: { include: ['default', ns] } },
    } });
    assert.equal(mc['spec']['contextOptions'][0]['ttl'], undefined, 'Retina\'s older CRD has no ttl (pruned): the upgrade below must change the schema');
    // ... and a Capture Retina ran to completion (its Jobs since cleaned up).
    const cap = await client.request<Obj>('POST', collectionPath(resources.captures, ns), { body: {
      apiVersion: 'retina.sh/v1alpha1', kind: 'Capture', metadata: { name: 'old-capture', namespace: ns },
      spec: { captureConfiguration: { captureOption: { duration: '30s', maxCaptureSize: 100, packetSize: 0 }, captureTarget: { podSelector: { matchLabels: { app: 'web' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } } },
        outputConfiguration: { hostPath: 'old' } },
    } });
    const started = '2025-01-20T10:00:00Z';
    const finished = { startTime: started, completionTime: '2025-01-20T10:00:40Z', succeeded: 2, active: 0, failed: 0,
      conditions: [{ type: 'complete', status: 'True', reason: 'JobsCompleted', message: 'All 2 capture jobs completed', lastTransitionTime: '2025-01-20T10:00:40Z' }] };
    await client.request('PATCH', `${objectPath(resources.captures, ns, 'old-capture')}/status`, { contentType: 'application/merge-patch+json', body: { status: finished } });
    const before = {
      re: new Map((await listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns)).map((r) => [r.metadata.name, r.metadata.uid])),
      // Only the CRDs Retina had (ContainerNetworkLog and RetinaEndpointSlice are ours alone: the operator creates them).
      crds: new Map(await Promise.all(crdFiles(OLD).map(async (c) => [c['metadata']['name'] as string, (await client.request<Obj>('GET', objectPath(CRDS, undefined, c['metadata']['name'] as string)))['metadata']['uid'] as string] as const))),
    };
    const oursOnly = crdFiles(OURS).map((c) => c['metadata']['name'] as string).filter((n) => !before.crds.has(n));
    assert.deepEqual(oursOnly.sort(), ['containernetworklogs.acn.azure.com', 'retinaendpointslices.retina.sh'], 'Retina\'s older chart has every CRD of ours but ContainerNetworkLog and RetinaEndpointSlice');
    assert.equal(before.re.size, 2);

    // Retina uninstalled (Helm leaves CRDs and custom resources); ours installed: the operator upgrades the CRDs at start.
    operator = await startOperator(cluster.kubeconfig, { RETINA_INSTALLCRDS: 'true', RETINA_ENABLERETINAENDPOINT: 'true', RETINA_LEADERELECTIONID: uniqueId('retina-op') });

    for (const c of crdFiles(OURS)) {
      const live = await client.request<Obj>('GET', objectPath(CRDS, undefined, c['metadata']['name'] as string));
      const name = c['metadata']['name'] as string;
      if (before.crds.has(name)) assert.equal(live['metadata']['uid'], before.crds.get(name), `${name} updated in place, not recreated`);
      assert.deepEqual(live['spec']['versions'].map((v: Obj) => v['schema']), c['spec']['versions'].map((v: Obj) => v['schema']), `${c['metadata']['name']}: our schema`);
    }
    const mcCrd = await client.request<Obj>('GET', objectPath(CRDS, undefined, 'metricsconfigurations.retina.sh'));
    assert.ok(contextProps(mcCrd).includes('ttl'));
    // Retina's TracesConfiguration CRD (not ours) is left alone.
    assert.ok(await client.request('GET', objectPath(CRDS, undefined, 'tracesconfigurations.retina.sh')).then(() => true, () => false));

    // RetinaEndpoints: the same objects, adopted (owned by their Pod) and in our shape.
    await eventually('RetinaEndpoints adopted', 60_000, () => converged(client, ns), 500);
    const after_ = await listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns);
    assert.deepEqual(new Map(after_.map((r) => [r.metadata.name, r.metadata.uid])), before.re, 'same RetinaEndpoint objects (uids)');

    // MetricsConfiguration: same object, validated and accepted by our operator; ttl now kept.
    const accepted = await eventually('MetricsConfiguration accepted', 60_000, async () => {
      const m = await client.request<Obj>('GET', objectPath(resources.metricsConfigurations, undefined, mc['metadata']['name'] as string));
      return m['status']?.['state'] === 'Accepted' && m;
    }, 500);
    assert.equal(accepted['metadata']['uid'], mc['metadata']['uid']);
    const patched = await client.request<Obj>('PATCH', objectPath(resources.metricsConfigurations, undefined, mc['metadata']['name'] as string), {
      contentType: 'application/merge-patch+json', body: { spec: { contextOptions: [{ metricName: 'drop_count', sourceLabels: ['ip', 'podname'], destinationLabels: ['ip'], ttl: '10m' }] } },
    });
    assert.equal(patched['spec']['contextOptions'][0]['ttl'], '10m', 'the upgraded CRD keeps ttl');

    // Capture: the same object, its finished status kept, no capture Job started again.
    const c2 = await eventually('Capture reconciled (our finalizer)', 60_000, async () => {
      const c = await client.request<Obj>('GET', objectPath(resources.captures, ns, 'old-capture'));
      return ((c['metadata']['finalizers'] as string[] | undefined) ?? []).length > 0 && c;
    }, 500);
    assert.equal(c2['metadata']['uid'], cap['metadata']['uid']);
    assert.equal(c2['status']['startTime'], started);
    assert.equal(c2['status']['completionTime'], finished.completionTime);
    assert.deepEqual(await listAll(client, JOBS, ns), [], 'no capture Job started for a finished Capture');
    const withCleanup = await client.request<Obj>('PATCH', objectPath(resources.captures, ns, 'old-capture'), { contentType: 'application/merge-patch+json', body: { spec: { cleanUpAfterUpload: false } } });
    assert.equal(withCleanup['spec']['cleanUpAfterUpload'], false, 'the upgraded CRD keeps cleanUpAfterUpload');
  });
});
