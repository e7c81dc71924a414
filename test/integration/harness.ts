/**
 * The shared helper of the integration tests: starts the real control plane (hack/k8s/harness.sh:
 * etcd, kube-apiserver, controller-manager, scheduler, kwok) once per test file and always stops it.
 * If a harness is already up (`make k8s-up`, or `make test`'s k8s lane, which starts one for all its
 * files), it is reused and left running; each file works in namespaces of its own. It never skips: when the
 * API server cannot start, the test fails with the harness's output.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { dirLock } from './dir-lock.js';
import { createRestClient, loadRestConfig, isApiError, collectionPath, objectPath, resources, type RestClient, type KubeList, type KubeObject, type ResourceRef } from '../../src/k8s/index.js';

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const HARNESS = `${ROOT}hack/k8s/harness.sh`;
export const KUBECONFIG = `${ROOT}.cache/k8s/kubeconfig`;
/** Where kwok runs `pods/exec` commands (hack/k8s/harness.sh's ClusterExec: a local command, this working directory). */
export const EXEC_ROOT = `${ROOT}.cache/k8s/run/exec-root`;
export const ETCD = `http://127.0.0.1:${process.env['RETINA_K8S_ETCD_PORT'] ?? '23379'}`;

export interface Cluster extends AsyncDisposable {
  readonly kubeconfig: string;
  readonly client: RestClient;
  /** True when this helper started the harness (and will stop it). */
  readonly owned: boolean;
}

async function harness(cmd: string, ...args: string[]): Promise<void> {
  try {
    await run(HARNESS, [cmd, ...args], { cwd: ROOT, maxBuffer: 64 << 20, timeout: 40 * 60_000 });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`hack/k8s/harness.sh ${cmd} failed: ${err.message}\n${err.stderr ?? ''}${err.stdout ?? ''}`, { cause: e });
  }
}

async function reachable(): Promise<RestClient | undefined> {
  if (!existsSync(KUBECONFIG)) return undefined;
  try {
    const c = createRestClient(await loadRestConfig({ kubeconfig: KUBECONFIG, env: {} }));
    await c.request('GET', '/readyz', { timeoutMs: 3000 }).catch(async (e: unknown) => {
      // /readyz answers text, not JSON: a parse error still means it answered 200
      if (isApiError(e)) throw e;
      if (!(e instanceof SyntaxError)) throw e;
    });
    return c;
  } catch {
    return undefined;
  }
}

/**
 * One test file (or benchmark) at a time uses the harness, even across concurrent `make test` runs in
 * the same checkout: a lock directory holding the owner's pid (a dead owner's lock is taken over).
 */
const LOCK = `${ROOT}.cache/k8s/harness.lock`;
async function lock(): Promise<() => void> {
  mkdirSync(`${ROOT}.cache/k8s`, { recursive: true });
  return dirLock(LOCK, { waitMs: 45 * 60_000, pollMs: 500, busy: (owner) => `the k8s harness is locked by pid ${owner} (${LOCK})` });
}

export interface ClusterOptions {
  /**
   * The file kills or restarts control-plane processes (the API server, etcd): a control plane it did
   * not start (`make test` shares one between the files of its k8s lane, hack/test/lanes.mjs) is
   * stopped and started afresh when the file is done, so that the next file meets processes that never
   * lost their API server (kwok, for one, was seen leaving pods Pending after the API server's restarts).
   */
  readonly disruptive?: boolean;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const unlock = await lock();
  try {
    return await startLocked(unlock, opts);
  } catch (e) {
    unlock();
    throw e;
  }
}

async function startLocked(unlock: () => void, opts: ClusterOptions): Promise<Cluster> {
  let client = await reachable();
  const owned = !client;
  if (!client) {
    await harness('up');
    client = await reachable();
    if (!client) throw new Error('the harness came up but the API server is not reachable with .cache/k8s/kubeconfig');
  }
  const c = client;
  if (!owned) await earlierFilesGone(c);
  return {
    kubeconfig: KUBECONFIG,
    client: c,
    owned,
    async [Symbol.asyncDispose]() {
      c.close();
      try {
        if (owned || opts.disruptive) await harness('down');
        if (!owned && opts.disruptive) await harness('up');
      } finally {
        unlock();
      }
    },
  };
}

/**
 * On a control plane shared with earlier files: waits (up to a minute) until the namespaces earlier
 * files deleted hold no pods, so that a file starts on a quiet cluster. An earlier file's namespace
 * going away deletes its pods (and their endpoints) for a while, which a cluster-wide watcher (the
 * operator) would count as this file's work. Those pods are deleted at once (grace 0): a pod bound to a
 * node no kwok runs (a test's own node object) is never confirmed gone. What else a Terminating
 * namespace holds (a custom resource whose finalizer no operator removes any more) changes nothing and
 * is not waited for.
 */
async function earlierFilesGone(c: RestClient): Promise<void> {
  const podsLeft = async (): Promise<KubeObject[]> => {
    const terminating = (await listAll<KubeObject & { status?: { phase?: string } }>(c, resources.namespaces)).filter((n) => n.status?.phase === 'Terminating');
    return (await Promise.all(terminating.map((n) => listAll<KubeObject>(c, resources.pods, n.metadata.name)))).flat();
  };
  const forced = new Set<string>();
  const quiet = await eventually('the pods of the earlier files\' namespaces deleted', 60_000, async () => {
    const left = await podsLeft();
    for (const p of left) {
      const key = `${p.metadata.namespace ?? ''}/${p.metadata.name}`;
      if (forced.has(key)) continue;
      forced.add(key);
      await c.request('DELETE', objectPath(resources.pods, p.metadata.namespace, p.metadata.name), { body: { gracePeriodSeconds: 0 } }).catch(() => undefined);
    }
    return left.length === 0;
  }, 500).then(() => true, () => false);
  if (!quiet) console.log(`the shared test control plane still deletes pods ${(await podsLeft()).map((p) => `${p.metadata.namespace ?? ''}/${p.metadata.name}`).slice(0, 10).join(', ')}; starting anyway`);
}

export const restartApiserver = (): Promise<void> => harness('restart-apiserver');
export const stopApiserver = (): Promise<void> => harness('stop-apiserver');
export const startApiserver = (): Promise<void> => harness('start-apiserver');
/** SIGKILL (no graceful stop) one control-plane process; start it again with startApiserver/startEtcd. */
export const killComponent = (name: 'etcd' | 'kube-apiserver'): Promise<void> => harness('kill', name);
export const startEtcd = (): Promise<void> => harness('start-etcd');
/** `harness.sh status`: each component, running or stopped. */
export async function controlPlaneStatus(): Promise<string> {
  return (await run(HARNESS, ['status'], { cwd: ROOT })).stdout;
}
/** Starts again whatever component of a running harness has exited (`up` skips the live ones). */
export const reviveControlPlane = (): Promise<void> => harness('up');

/**
 * Reads until `quietReads` reads in a row, `everyMs` apart, equal the one before (compared as JSON),
 * and returns that value: counts that have stopped moving (e.g. the agent's series after traffic).
 */
export async function untilStable<T>(read: () => Promise<T>, quietReads = 3, everyMs = 1000): Promise<T> {
  let before = await read();
  for (let stable = 0; stable < quietReads;) {
    await new Promise((r) => setTimeout(r, everyMs));
    const now = await read();
    stable = JSON.stringify(now) === JSON.stringify(before) ? stable + 1 : 0;
    before = now;
  }
  return before;
}

/** Polls `check` until it returns a value that is not undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined | false> | T | undefined | false, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function listAll<T extends KubeObject>(client: RestClient, res: ResourceRef, namespace?: string, query: Record<string, string> = {}): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  do {
    const page = await client.request<KubeList<T>>('GET', collectionPath(res, namespace), { query: { ...query, limit: 500, continue: cont } });
    out.push(...page.items);
    cont = page.metadata.continue || undefined;
  } while (cont);
  return out;
}

export async function createNamespace(client: RestClient, name: string): Promise<void> {
  await client.request('POST', collectionPath(resources.namespaces), { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
}

export async function deleteNamespace(client: RestClient, name: string): Promise<void> {
  await client.request('DELETE', objectPath(resources.namespaces, undefined, name)).catch(() => undefined);
}

export const deployments: ResourceRef = { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true };

export function deployment(namespace: string, name: string, replicas: number, labels: Record<string, string> = {}): unknown {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name, ...labels } },
        spec: {
          containers: [{ name: 'main', image: 'registry.invalid/fake:1' }],
          tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
          terminationGracePeriodSeconds: 0,
        },
      },
    },
  };
}

export async function scale(client: RestClient, namespace: string, name: string, replicas: number): Promise<void> {
  await client.request('PATCH', objectPath(deployments, namespace, name), { contentType: 'application/merge-patch+json', body: { spec: { replicas } } });
}

/** Pods that are Running with an IP and not host-network: the ones that get RetinaEndpoints. */
export function eligible(p: { spec?: { hostNetwork?: boolean }; status?: { phase?: string; podIP?: string } }): boolean {
  return !p.spec?.hostNetwork && Boolean(p.status?.podIP) && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
}

/** Reads the etcd revision and compacts everything before it (physical), through etcd's JSON gateway. */
export async function compactEtcd(): Promise<number> {
  const r = await fetch(`${ETCD}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') , limit: 1 }) });
  const rev = Number(((await r.json()) as { header: { revision: string } }).header.revision);
  const c = await fetch(`${ETCD}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: rev, physical: true }) });
  if (!c.ok) throw new Error(`etcd compaction failed: ${c.status} ${await c.text()}`);
  return rev;
}

/** Deletes one key straight from etcd (the API server does not see it happen). */
export async function etcdDelete(key: string): Promise<void> {
  const r = await fetch(`${ETCD}/v3/kv/deleterange`, { method: 'POST', body: JSON.stringify({ key: Buffer.from(key).toString('base64') }) });
  if (!r.ok) throw new Error(`etcd delete failed: ${r.status}`);
}

export function readToken(): string {
  return readFileSync(`${ROOT}.cache/k8s/run/pki/token`, 'utf8').trim();
}

/**
 * A Deployment whose pods look like production ones (app + sidecar, ports, env, resources, probes,
 * the projected service-account volume the ServiceAccount admission adds): the harness's default
 * pods are minimal, which flatters what watching Pods costs.
 */
export function realisticDeployment(namespace: string, name: string, replicas: number): unknown {
  const d = deployment(namespace, name, replicas) as { spec: { template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: Record<string, unknown> } } };
  d.spec.template.metadata.labels = { ...d.spec.template.metadata.labels, 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': 'shop', 'app.kubernetes.io/version': '1.4.2', team: 'payments' };
  d.spec.template.metadata.annotations = { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090', 'kubectl.kubernetes.io/restartedAt': '2026-11-01T10:00:00Z' };
  const probe = (path: string): unknown => ({ httpGet: { path, port: 8080, scheme: 'HTTP' }, initialDelaySeconds: 5, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 });
  const mount = { name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true };
  d.spec.template.spec = {
    ...d.spec.template.spec,
    serviceAccountName: 'default',
    securityContext: { runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
    containers: [
      {
        name: 'app', image: 'registry.example.com/shop/app:1.4.2', ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'metrics', containerPort: 9090, protocol: 'TCP' }],
        env: [
          { name: 'LOG_LEVEL', value: 'info' }, { name: 'DB_HOST', value: 'postgres.shop.svc.cluster.local' }, { name: 'DB_PORT', value: '5432' },
          { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
          { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
          { name: 'GOMAXPROCS', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1' } } },
        ],
        resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } },
        readinessProbe: probe('/ready'), livenessProbe: probe('/healthz'),
        securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        volumeMounts: [{ name: 'config', mountPath: '/etc/app' }, mount],
      },
      {
        name: 'proxy', image: 'registry.example.com/mesh/proxy:1.22.0', args: ['proxy', 'sidecar', '--concurrency', '2', '--log-level', 'warning'],
        ports: [{ name: 'proxy-admin', containerPort: 15000, protocol: 'TCP' }],
        resources: { requests: { cpu: '10m', memory: '40Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
        securityContext: { allowPrivilegeEscalation: false, runAsUser: 1337, capabilities: { drop: ['ALL'] } },
        volumeMounts: [mount],
      },
    ],
    volumes: [
      { name: 'config', configMap: { name: `${name}-config`, defaultMode: 420 } },
      {
        name: 'kube-api-access',
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
    ],
  };
  return d;
}
