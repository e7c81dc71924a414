/**
 * Where the API server is and how to authenticate: a kubeconfig file, or the in-cluster service
 * account. The light path reads the kubeconfig with `yaml` and handles what agents meet in practice
 * (CA, client certificate, bearer token, token file); anything else (exec plugins, auth providers,
 * proxies) goes through @kubernetes/client-node's KubeConfig, loaded on demand only, because importing
 * it costs ~90 MB of RSS (its generated API). The operator can ask for client-node directly.
 */
import { readFileSync } from 'node:fs';
import type https from 'node:https';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { RestConfig } from './rest.js';

export class KubeconfigError extends Error {
  override readonly name = 'KubeconfigError';
}

export interface LoadRestConfigOptions {
  /** A kubeconfig path; without it the in-cluster configuration is used. */
  readonly kubeconfig?: string | undefined;
  /** The process environment (KUBERNETES_SERVICE_HOST/PORT for in-cluster). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** 'light' (default): our reader unless the kubeconfig needs more; 'client-node': always client-node. */
  readonly prefer?: 'light' | 'client-node';
  /** Service-account directory, for tests. */
  readonly serviceAccountDir?: string;
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** True when a kubeconfig or in-cluster credentials are available. */
export function kubernetesAvailable(opts: Pick<LoadRestConfigOptions, 'kubeconfig' | 'env'>): boolean {
  return Boolean(opts.kubeconfig) || Boolean(opts.env['KUBERNETES_SERVICE_HOST'] && opts.env['KUBERNETES_SERVICE_PORT']);
}

export async function loadRestConfig(opts: LoadRestConfigOptions): Promise<RestConfig> {
  if (!opts.kubeconfig) return inCluster(opts);
  if (opts.prefer === 'client-node') return viaClientNode(opts.kubeconfig);
  let text: string;
  try {
    text = readFileSync(opts.kubeconfig, 'utf8');
  } catch (e) {
    throw new KubeconfigError(`cannot read kubeconfig ${opts.kubeconfig}: ${(e as Error).message}`, { cause: e });
  }
  return light(opts.kubeconfig, text) ?? viaClientNode(opts.kubeconfig);
}

interface Named<T> {
  name: string;
  cluster?: T;
  user?: T;
  context?: T;
}
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Our reader; undefined when the kubeconfig needs client-node (exec, auth-provider, proxy...). */
function light(path: string, text: string): RestConfig | undefined {
  let doc: Obj;
  try {
    doc = (parseYaml(text) ?? {}) as Obj;
  } catch (e) {
    throw new KubeconfigError(`kubeconfig ${path} is not valid YAML: ${(e as Error).message}`, { cause: e });
  }
  if (!isObj(doc)) throw new KubeconfigError(`kubeconfig ${path} is not a YAML mapping`);
  const ctxName = doc['current-context'] as string | undefined;
  /** The `field` mapping of the entry called `name` in the list at key `list` (undefined when there is none). */
  const find = (list: 'contexts' | 'clusters' | 'users', name: unknown, field: 'cluster' | 'user' | 'context'): Obj | undefined => {
    const entries = doc[list] ?? [];
    if (!Array.isArray(entries)) throw new KubeconfigError(`kubeconfig ${path}: ${list} is not a list`);
    const hit = (entries as unknown[]).find((x): x is Named<unknown> => isObj(x) && x['name'] === name)?.[field];
    if (hit !== undefined && hit !== null && !isObj(hit)) throw new KubeconfigError(`kubeconfig ${path}: ${list} entry ${JSON.stringify(name)}: ${field} is not a mapping`);
    return hit ?? undefined;
  };
  const ctx = find('contexts', ctxName, 'context');
  if (!ctx) throw new KubeconfigError(`kubeconfig ${path}: current-context ${JSON.stringify(ctxName)} not found`);
  const cluster = find('clusters', ctx['cluster'], 'cluster');
  const user = find('users', ctx['user'], 'user') ?? {};
  if (!cluster || typeof cluster['server'] !== 'string') throw new KubeconfigError(`kubeconfig ${path}: cluster of context ${ctxName} has no server`);
  const known = new Set(['token', 'tokenFile', 'client-certificate', 'client-certificate-data', 'client-key', 'client-key-data']);
  if (Object.keys(user).some((k) => !known.has(k)) || cluster['proxy-url'] || cluster['tls-server-name']) return undefined;
  const base = dirname(path);
  const file = (p: unknown, field: string): Buffer | undefined => {
    if (typeof p !== 'string' || !p) return undefined;
    try {
      return readFileSync(isAbsolute(p) ? p : join(base, p));
    } catch (e) {
      throw new KubeconfigError(`kubeconfig ${path}: cannot read ${field} ${p}: ${(e as Error).message}`, { cause: e });
    }
  };
  const data = (d: unknown): Buffer | undefined => (typeof d === 'string' && d ? Buffer.from(d, 'base64') : undefined);
  const ca = data(cluster['certificate-authority-data']) ?? file(cluster['certificate-authority'], 'certificate-authority');
  const cert = data(user['client-certificate-data']) ?? file(user['client-certificate'], 'client-certificate');
  const key = data(user['client-key-data']) ?? file(user['client-key'], 'client-key');
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  const tokenFile = typeof user['tokenFile'] === 'string' ? user['tokenFile'] : undefined;
  const staticToken = typeof user['token'] === 'string' ? user['token'] : undefined;
  const token = tokenFile ? rereading(isAbsolute(tokenFile) ? tokenFile : join(base, tokenFile)) : () => staticToken;
  return {
    server: cluster['server'].replace(/\/+$/, ''),
    source: `kubeconfig ${path} (context ${ctxName})`,
    authorize: tlsAndToken({ ca, cert, key, insecure }, token),
  };
}

function inCluster(opts: LoadRestConfigOptions): RestConfig {
  const host = opts.env['KUBERNETES_SERVICE_HOST'];
  const port = opts.env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port) throw new KubeconfigError('no kubeconfig given and not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset)');
  const dir = opts.serviceAccountDir ?? SA_DIR;
  let ca: Buffer;
  try {
    ca = readFileSync(join(dir, 'ca.crt'));
  } catch (e) {
    throw new KubeconfigError(`in-cluster: cannot read ${join(dir, 'ca.crt')}: ${(e as Error).message}`, { cause: e });
  }
  const h = host.includes(':') ? `[${host}]` : host;
  return { server: `https://${h}:${port}`, source: 'in-cluster service account', authorize: tlsAndToken({ ca, insecure: false }, rereading(join(dir, 'token'))) };
}

/** Bound service-account tokens rotate: re-read the file at most once a minute. */
function rereading(path: string): () => string | undefined {
  let value: string | undefined;
  let readAt = 0;
  return () => {
    if (value === undefined || Date.now() - readAt > 60_000) {
      value = readFileSync(path, 'utf8').trim();
      readAt = Date.now();
    }
    return value;
  };
}

function tlsAndToken(tls: { ca?: Buffer | undefined; cert?: Buffer | undefined; key?: Buffer | undefined; insecure: boolean }, token: () => string | undefined): RestConfig['authorize'] {
  return async (o: https.RequestOptions) => {
    if (tls.ca) o.ca = tls.ca;
    if (tls.cert) o.cert = tls.cert;
    if (tls.key) o.key = tls.key;
    if (tls.insecure) o.rejectUnauthorized = false;
    const t = token();
    if (t) (o.headers as Record<string, string>)['Authorization'] = `Bearer ${t}`;
  };
}

/** client-node's KubeConfig: every auth method it supports, at the cost of loading it. */
async function viaClientNode(path: string): Promise<RestConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(path);
  } catch (e) {
    throw new KubeconfigError(`cannot load kubeconfig ${path}: ${(e as Error).message}`, { cause: e });
  }
  return restConfigFromKubeConfig(kc, `kubeconfig ${path}`);
}

/**
 * The current context of a loaded client-node KubeConfig as a RestConfig (the kubectl plugin merges
 * and overrides its kubeconfig itself, then talks through this). Its user's impersonateUser (the
 * kubeconfig's `as`, kubectl's --as) becomes the Impersonate-User header, as client-node sends it.
 */
export function restConfigFromKubeConfig(kc: KubeConfigLike, source: string): RestConfig {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeconfigError(`${source}: no current cluster`);
  return {
    server: cluster.server.replace(/\/+$/, ''),
    source: `${source} (context ${kc.getCurrentContext()}, client-node)`,
    async authorize(o) {
      const headers = o.headers as Record<string, string>;
      await kc.applyToHTTPSOptions(o);
      // applyToHTTPSOptions may replace the headers object; keep ours.
      o.headers = { ...headers, ...(o.headers as Record<string, string>) };
      // it may also set an agent of its own; the transport's keep-alive agent is the one to use.
    },
  };
}

/** What restConfigFromKubeConfig uses of client-node's KubeConfig (a type, so this module does not load it). */
export interface KubeConfigLike {
  getCurrentCluster(): { readonly server: string } | null;
  getCurrentContext(): string;
  applyToHTTPSOptions(o: https.RequestOptions): Promise<void>;
}
