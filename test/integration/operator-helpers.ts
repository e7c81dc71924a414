/** Builds operator configs and in-process operators for the integration tests. */
import { randomBytes } from 'node:crypto';
import { collectSpecs, loadValues, type ConfigSpec } from '../../src/config/index.js';
import { createRestClient, keyAllowlist, loadRestConfig, resources, type PodWire, type RestClient, type RetinaEndpoint } from '../../src/k8s/index.js';
import { createLogger, type Logger } from '../../src/log/index.js';
import { DEFAULT_LABEL_ALLOWLIST, canonical, operatorConfig, operatorKeys, podToSpec, type OperatorConfig } from '../../src/operator/index.js';
import { runOperator, type RunningOperator } from '../../src/cli/operator-run.js';
import { ROOT, eligible, listAll } from './harness.js';

export const CRD_DIR = `${ROOT}charts/retina/crds`;

export function testLog(component: string): Logger {
  return createLogger({ level: (process.env['RETINA_TEST_LOG'] as 'debug' | undefined) ?? 'warn', component });
}

export function operatorCfg(env: Record<string, string> = {}): OperatorConfig {
  const keys = operatorKeys();
  return operatorConfig(keys, loadValues({
    env: { RETINA_REMOTECONTEXT: 'true', RETINA_METRICSADDR: '127.0.0.1:0', RETINA_PROBEADDR: '127.0.0.1:0', RETINA_RETRYPERIOD: '1s', ...env },
    specs: collectSpecs(keys as ConfigSpec<object>),
  }));
}

export async function newClient(kubeconfig: string): Promise<RestClient> {
  return createRestClient(await loadRestConfig({ kubeconfig, env: {} }));
}

export const uniqueId = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

export async function startOperator(kubeconfig: string, env: Record<string, string> = {}, identity?: string, health?: () => string | undefined): Promise<{ op: RunningOperator; client: RestClient } & AsyncDisposable> {
  const client = await newClient(kubeconfig);
  const op = await runOperator({ config: operatorCfg(env), client, log: testLog('operator'), crdDir: CRD_DIR, identity, ...(health ? { health } : {}) });
  return {
    op,
    client,
    async [Symbol.asyncDispose]() {
      await op[Symbol.asyncDispose]();
      client.close();
    },
  };
}

/** Sum of a counter family's values, optionally filtered by label values. */
export async function counterValue(op: RunningOperator, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = op.metrics.registry.getSingleMetric(name);
  if (!m) return 0;
  const { values } = await m.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x)).reduce((s, v) => s + v.value, 0);
}

/** Every eligible pod has exactly the RetinaEndpoint it should, and there are no others. */
export async function converged(client: RestClient, ns: string): Promise<boolean> {
  const [pods, res] = await Promise.all([listAll<PodWire>(client, resources.pods, ns), listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns)]);
  const want = new Map(pods.filter(eligible).map((p) => [p.metadata.name, { uid: p.metadata.uid, spec: podToSpec(p, keyAllowlist(DEFAULT_LABEL_ALLOWLIST), keyAllowlist(['retina.sh'])) }]));
  if (res.length !== want.size) return false;
  return res.every((r) => {
    const w = want.get(r.metadata.name);
    return w && r.metadata.ownerReferences?.[0]?.uid === w.uid && canonical(r.spec) === canonical(w.spec);
  });
}

export interface EndpointDiff { readonly pods: number; readonly endpoints: number; readonly missing: string[]; readonly extra: string[] }

/** RetinaEndpoints against the eligible pods of `ns`: names missing, names left over, and the counts. */
export async function endpointDiff(client: RestClient, ns: string): Promise<EndpointDiff> {
  const [pods, res] = await Promise.all([listAll<PodWire>(client, resources.pods, ns), listAll<RetinaEndpoint>(client, resources.retinaEndpoints, ns)]);
  return endpointDiffOf(pods, res);
}

/** endpointDiff of pods and RetinaEndpoints already listed. */
export function endpointDiffOf(pods: readonly PodWire[], res: readonly RetinaEndpoint[]): EndpointDiff {
  const want = new Set(pods.filter(eligible).map((p) => p.metadata.name));
  const have = new Set(res.map((r) => r.metadata.name));
  return { pods: want.size, endpoints: have.size, missing: [...want].filter((n) => !have.has(n)), extra: [...have].filter((n) => !want.has(n)) };
}

/** Pods counted by phase, whether scheduled, and whether they have an IP or a deletion mark (a timeout's explanation). */
export function podsByState(pods: readonly PodWire[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const p of pods) {
    const w = p as unknown as { metadata: { deletionTimestamp?: string }; spec?: { nodeName?: string }; status?: { phase?: string; podIP?: string } };
    const k = `${w.status?.phase ?? 'none'}${w.spec?.nodeName ? '' : '/unscheduled'}${w.status?.podIP ? '' : '/noIP'}${w.metadata.deletionTimestamp ? '/deleting' : ''}`;
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return counts;
}
