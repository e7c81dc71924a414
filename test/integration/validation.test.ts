/**
 * Bad custom resources are rejected by the CRDs' validation, or reported in status by the operator;
 * neither the operator nor an agent crashes on them. Also: one MetricsConfiguration active at a time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IpCache, type PodEndpoint } from '../../src/cache/index.js';
import { ApiError, collectionPath, objectPath, resources, startAgentWatch, type MetricsConfiguration, type RestClient } from '../../src/k8s/index.js';
import { createNamespace, deleteNamespace, eventually, ROOT, startCluster, type Cluster } from './harness.js';
import { CRD_DIR, startOperator, testLog, uniqueId } from './operator-helpers.js';
import { installCrds } from '../../src/operator/index.js';
import { spawn } from 'node:child_process';

async function rejected(p: Promise<unknown>, what: string): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ApiError && e.code === 422, `${what}: expected 422 Invalid, got ${(e as Error).message}`);
    return e;
  }
  assert.fail(`${what}: the API server accepted it`);
}

describe('validation of custom resources', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let operator: Awaited<ReturnType<typeof startOperator>>;
  const ns = uniqueId('val');
  const prefix = uniqueId('mc');
  const mcPath = collectionPath(resources.metricsConfigurations);
  const mc = (name: string, spec: unknown): unknown => ({ apiVersion: 'retina.sh/v1alpha1', kind: 'MetricsConfiguration', metadata: { name: `${prefix}-${name}` }, spec });
  const good = { contextOptions: [{ metricName: 'drop_count', sourceLabels: ['ip', 'podname'], ttl: '5m' }], namespaces: { include: ['default'] } };
  const status = async (name: string): Promise<MetricsConfiguration['status']> =>
    (await client.request<MetricsConfiguration>('GET', objectPath(resources.metricsConfigurations, undefined, `${prefix}-${name}`))).status;

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    await createNamespace(client, ns);
    // Earlier runs against a reused harness may have left MetricsConfigurations behind.
    const list = await client.request<{ items: MetricsConfiguration[] }>('GET', mcPath);
    for (const m of list.items) await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, m.metadata.name));
    operator = await startOperator(cluster.kubeconfig, { RETINA_LEADERELECTIONID: uniqueId('retina-val') });
  });

  after(async () => {
    await operator?.[Symbol.asyncDispose]();
    if (client) {
      const list = await client.request<{ items: MetricsConfiguration[] }>('GET', mcPath);
      for (const m of list.items) if (m.metadata.name.startsWith(prefix)) await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, m.metadata.name));
      await deleteNamespace(client, ns);
    }
    await cluster?.[Symbol.asyncDispose]();
  });

  it('rejects malformed RetinaEndpoints, MetricsConfigurations and Captures with 422', async () => {
    const rePath = collectionPath(resources.retinaEndpoints, ns);
    const re = (spec: unknown): unknown => ({ apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: uniqueId('bad') }, spec });
    await rejected(client.request('POST', rePath, { body: re({ podIP: 'not-an-ip' }) }), 'podIP not an IP');
    await rejected(client.request('POST', rePath, { body: re({ podIPs: ['10.0.0.1'] }) }), 'podIP missing');
    await rejected(client.request('POST', rePath, { body: re({ podIP: '10.0.0.1', podIPs: ['10.0.0.1', 'fd00::1', '10.0.0.2'] }) }), 'three podIPs');
    await rejected(client.request('POST', rePath, { body: { apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: 'nospec' } } }), 'no spec');
    await rejected(client.request('POST', mcPath, { body: mc('both', { ...good, namespaces: { include: ['a'], exclude: ['b'] } }) }), 'include and exclude');
    await rejected(client.request('POST', mcPath, { body: mc('empty', { contextOptions: [], namespaces: { include: [] } }) }), 'no contextOptions');
    await rejected(client.request('POST', mcPath, { body: mc('ttl', { ...good, contextOptions: [{ metricName: 'drop_count', ttl: 'soon' }] }) }), 'bad ttl');
    await rejected(client.request('POST', mcPath, { body: mc('state', good) }).then(() =>
      client.request('PATCH', objectPath(resources.metricsConfigurations, undefined, `${prefix}-state`, 'status'), { contentType: 'application/merge-patch+json', body: { status: { state: 'Bogus' } } })), 'unknown state');
    await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, `${prefix}-state`));
    const cap = (spec: unknown): unknown => ({ apiVersion: 'retina.sh/v1alpha1', kind: 'Capture', metadata: { name: uniqueId('cap') }, spec });
    const capPath = collectionPath(resources.captures, ns);
    const target = { nodeSelector: { matchLabels: { type: 'kwok' } } };
    await rejected(client.request('POST', capPath, { body: cap({ captureConfiguration: { captureTarget: target }, outputConfiguration: { hostPath: '/etc' } }) }), 'absolute hostPath');
    await rejected(client.request('POST', capPath, { body: cap({ captureConfiguration: { captureTarget: target }, outputConfiguration: { hostPath: 'a/../../etc' } }) }), 'hostPath with ..');
    await rejected(client.request('POST', capPath, { body: cap({ captureConfiguration: { captureTarget: { ...target, podSelector: {} } }, outputConfiguration: {} }) }), 'nodeSelector with podSelector');
    await rejected(client.request('POST', capPath, { body: cap({ captureConfiguration: { captureTarget: target, captureOption: { verbosity: 'loud' } }, outputConfiguration: {} }) }), 'bad verbosity');
    // A good one is accepted, with defaults applied.
    const ok = await client.request<{ spec: { captureConfiguration: { includeMetadata: boolean } } }>('POST', capPath, { body: cap({ captureConfiguration: { captureTarget: target }, outputConfiguration: { hostPath: 'captures' } }) });
    assert.equal(ok.spec.captureConfiguration.includeMetadata, true);
  });

  it('reports invalid MetricsConfigurations in status and keeps one Accepted', async () => {
    await client.request('POST', mcPath, { body: mc('a-first', good) });
    await eventually('first Accepted', 20_000, async () => (await status('a-first'))?.state === 'Accepted');
    assert.deepEqual((await status('a-first'))?.lastKnownSpec, good);
    await client.request('POST', mcPath, { body: mc('b-unknown-metric', { contextOptions: [{ metricName: 'bogus_count' }], namespaces: { exclude: ['kube-system'] } }) });
    await client.request('POST', mcPath, { body: mc('c-neither', { contextOptions: [{ metricName: 'forward_count', sourceLabels: ['nonsense'] }], namespaces: {} }) });
    await client.request('POST', mcPath, { body: mc('d-second', { ...good, namespaces: { exclude: ['kube-system'] } }) });
    const b = await eventually('unknown metric Errored', 20_000, async () => ((await status('b-unknown-metric'))?.state === 'Errored' ? status('b-unknown-metric') : undefined));
    assert.match(b?.reason ?? '', /bogus_count/);
    const c = await eventually('neither include nor exclude Errored', 20_000, async () => ((await status('c-neither'))?.state === 'Errored' ? status('c-neither') : undefined));
    // Retina rejects a spec with neither; an unknown label alone would only be a warning.
    assert.equal(c?.reason, 'spec.namespaces: set include or exclude (Retina rejects a spec with neither; exclude: [] means every namespace)');
    const d = await eventually('second valid one Errored', 20_000, async () => ((await status('d-second'))?.state === 'Errored' ? status('d-second') : undefined));
    assert.match(d?.reason ?? '', /already active/);
    assert.equal((await status('a-first'))?.state, 'Accepted', 'the active one stays active');
    // The active one goes away: the remaining valid one takes over.
    await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, `${prefix}-a-first`));
    await eventually('second becomes Accepted', 20_000, async () => (await status('d-second'))?.state === 'Accepted');
    // Events record the state changes.
    // (written after the status: read until it is there)
    await eventually('an Errored event for the unknown metric', 20_000, async () => {
      const events = await client.request<{ items: { reason: string; involvedObject: { name: string } }[] }>('GET', collectionPath(resources.events, 'default'));
      return events.items.some((e) => e.reason === 'Errored' && e.involvedObject.name === `${prefix}-b-unknown-metric`);
    });
  });

  it("accepts Retina's documented MetricsConfiguration example, with what it ignores in the status", async () => {
    for (const n of ['a-first', 'b-unknown-metric', 'c-neither', 'd-second']) {
      await client.request('DELETE', objectPath(resources.metricsConfigurations, undefined, `${prefix}-${n}`)).catch(() => undefined);
    }
    // Verbatim from Retina's docs/05-Concepts/CRDs/MetricsConfiguration.md ("Creating a MetricsConfiguration").
    const doc = {
      contextOptions: [
        { metricName: 'drop_count', sourceLabels: ['ip', 'podname', 'port'], additionalLabels: ['direction'], ttl: '24h' },
        { metricName: 'forward_count', sourceLabels: ['ip', 'podname', 'port'], additionalLabels: ['direction'] },
      ],
      namespaces: { include: ['default', 'kube-system'] },
    };
    await client.request('POST', mcPath, { body: mc('e-retina-doc', doc) });
    const e = await eventually('documented example Accepted', 20_000, async () => ((await status('e-retina-doc'))?.state === 'Accepted' ? status('e-retina-doc') : undefined));
    assert.deepEqual(e?.lastKnownSpec, doc);
    assert.match(e?.reason ?? '', /^accepted; ignored: spec\.contextOptions\[0\]\.additionalLabels\[0\]: "direction" has no effect: direction is always a label of drop_count/);
    assert.match(e?.reason ?? '', /spec\.contextOptions\[1\]\.additionalLabels\[0\]: "direction" has no effect/);
    // The event is written after the status (a 2-CPU machine busy with a build met it missing once).
    await eventually('an AcceptedWithWarnings event with the status\'s reason', 20_000, async () => {
      const events = await client.request<{ items: { reason: string; message: string; involvedObject: { name: string } }[] }>('GET', collectionPath(resources.events, 'default'));
      return events.items.some((v) => v.reason === 'AcceptedWithWarnings' && v.involvedObject.name === `${prefix}-e-retina-doc` && v.message === e?.reason);
    });
  });

  it('neither the operator nor an agent crashes on odd but valid resources', async () => {
    const seen = new Map<string, string[]>();
    const cache = new (class extends IpCache {
      override upsertPod(e: PodEndpoint): void {
        seen.set(e.name, [...e.ips]);
        super.upsertPod(e);
      }
    })();
    const agent = startAgentWatch({ client, cache, remoteContext: true, log: testLog('agent') });
    try {
      await agent.waitForSync();
      const rePath = collectionPath(resources.retinaEndpoints, ns);
      // Valid for the schema, odd for us: uncompressed IPv6, no owners, huge label values, no nodeIP.
      await client.request('POST', rePath, { body: { apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: 'odd1' }, spec: { podIP: 'FD00:0:0:0:0:0:0:AB' } } });
      await client.request('POST', rePath, { body: { apiVersion: 'retina.sh/v1alpha1', kind: 'RetinaEndpoint', metadata: { name: 'odd2' }, spec: { podIP: '10.99.0.1', labels: { x: 'y'.repeat(63) }, containers: [{ name: 'c' }] } } });
      // (the operator may delete them at once: they have no pod; the agent must still have seen them)
      await eventually('odd endpoints cached', 10_000, () => seen.get('odd1')?.[0] === 'fd00::ab' && seen.get('odd2')?.[0] === '10.99.0.1');
      // The operator deletes RetinaEndpoints that have no pod (they are its to manage).
      await eventually('orphans removed by the operator', 20_000, () => cache.pod(ns, 'odd1') === undefined && cache.pod(ns, 'odd2') === undefined);
      const r = await fetch(`http://127.0.0.1:${operator.op.probeServer.address.port}/healthz`);
      assert.equal(r.status, 200);
      const ready = await fetch(`http://127.0.0.1:${operator.op.probeServer.address.port}/readyz`);
      assert.equal(ready.status, 200);
      const metrics = await (await fetch(`http://127.0.0.1:${operator.op.metricsServer.address.port}/metrics`)).text();
      assert.match(metrics, /workqueue_depth\{name="retinaendpoint"\}/);
      assert.match(metrics, /controller_runtime_reconcile_time_seconds_bucket/);
      assert.match(metrics, /leader_election_master_status\{name="retina-val-[0-9a-f]+"\} 1/);
    } finally {
      await agent[Symbol.asyncDispose]();
    }
  });

  it('the operator installs (updates) the CRDs and waits until they are Established', async () => {
    const names = await installCrds({ client, dir: CRD_DIR, log: testLog('crd') });
    assert.deepEqual(names.sort(), ['captures.retina.sh', 'containernetworklogs.acn.azure.com', 'metricsconfigurations.retina.sh', 'retinaendpoints.retina.sh', 'retinaendpointslices.retina.sh']);
  });

  it('bin/retina-agent: standalone without Kubernetes, watching with --kubeconfig, clean exit on SIGTERM', async () => {
    const run = async (args: string[], until: RegExp, whileUp?: (port: number) => Promise<void>): Promise<{ code: number | null; log: string }> => {
      const a = spawn(`${ROOT}bin/retina-agent`, args, {
        env: { PATH: process.env['PATH'], RETINA_REMOTECONTEXT: 'true', RETINA_APISERVER_HOST: '127.0.0.1', RETINA_APISERVER_PORT: '0', RETINA_ENABLEDPLUGIN: 'linuxutil' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let log = '';
      a.stderr.setEncoding('utf8');
      a.stderr.on('data', (d: string) => (log += d));
      try {
        await eventually(`agent log ${until}`, 30_000, () => until.test(log), 100);
        const port = Number(/"msg":"http server listening"[^\n]*"port":(\d+)/.exec(log)?.[1]);
        await whileUp?.(port);
      } finally {
        a.kill('SIGTERM');
      }
      const code = await new Promise<number | null>((r) => a.once('exit', (c) => r(c)));
      return { code, log };
    };
    const standalone = await run([], /running standalone/);
    assert.equal(standalone.code, 0);
    const watching = await run(['--kubeconfig', cluster.kubeconfig], /"msg":"IP cache synced"/, async (port) => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.match(text, /controlplane_networkobservability_k8s_watch_events_total\{resource="retinaendpoints.retina.sh",event="listed"\} 1/);
    });
    assert.equal(watching.code, 0, watching.log);
    assert.match(watching.log, /"nodes":10/);
  });
});
