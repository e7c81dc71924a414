/**
 * kubectl's common flags, taken by every `kubectl-retina` subcommand wherever they stand on the
 * command line (as kubectl's global flags): --kubeconfig, --context, --cluster, --user,
 * -n/--namespace, --as, --request-timeout. The main entry takes them out of the arguments before a
 * subcommand parses its own (splitKubeFlags), so a subcommand gets them without declaring them; one
 * that talks to the cluster calls loadKube.
 *
 * The kubeconfig is loaded as kubectl loads it (client-go's clientcmd): --kubeconfig alone when given,
 * else every file of $KUBECONFIG merged (the first file to set a cluster, user or context name, or
 * current-context, wins; missing files are skipped), else ~/.kube/config, else the in-cluster service
 * account. client-node's own loadFromDefault merges differently (a later file's current-context wins
 * and a name in two files is an error), so the files are merged here and each is read by client-node
 * (which makes its certificate paths absolute against its own folder).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Cluster, Context, KubeConfig, User } from '@kubernetes/client-node';
import { createRestClient, KubeconfigError, restConfigFromKubeConfig, type RestClient } from '../k8s/index.js';
import { UsageError } from './args.js';

export interface KubeFlags {
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly cluster?: string;
  readonly user?: string;
  readonly namespace?: string;
  readonly as?: string;
  readonly requestTimeout?: string;
}

export const KUBE_FLAGS_USAGE = `kubectl's flags (every subcommand, anywhere on the command line):
  --kubeconfig FILE        the kubeconfig (default: the files of $KUBECONFIG merged, else ~/.kube/config,
                           else the in-cluster service account)
  --context NAME           the kubeconfig context to use (default: its current-context)
  --cluster NAME           the kubeconfig cluster to use (default: the context's)
  --user NAME              the kubeconfig user to use (default: the context's)
  -n, --namespace NS       the namespace (default: the context's namespace, else default)
  --as USER                act as USER (impersonation: the Impersonate-User header)
  --request-timeout D      how long one request may wait for its answer: 0 (no limit, the default), a bare
                           number of seconds, or a duration such as 500ms, 30s, 2m, 1h`;

const LONG: Readonly<Record<string, keyof KubeFlags>> = {
  kubeconfig: 'kubeconfig', context: 'context', cluster: 'cluster', user: 'user', namespace: 'namespace', as: 'as', 'request-timeout': 'requestTimeout',
};

/**
 * Takes kubectl's common flags out of `argv`: `--flag value`, `--flag=value`, `-n NS`, `-nNS`, `-n=NS`.
 * What follows `--` is left alone. The last of a repeated flag wins (pflag's rule).
 */
export function splitKubeFlags(argv: readonly string[]): { kube: KubeFlags; rest: string[] } {
  const kube: Record<string, string> = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    const long = /^--([a-z-]+)(?:=([\s\S]*))?$/.exec(a);
    const short = long ? undefined : /^-n(?:=?([\s\S]+))?$/.exec(a);
    const key = long ? LONG[long[1] as string] : short ? 'namespace' : undefined;
    if (key === undefined || (long && !Object.hasOwn(LONG, long[1] as string))) {
      rest.push(a);
      continue;
    }
    const inline = long ? long[2] : short?.[1];
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`${long ? `--${long[1]}` : '-n'} needs a value`);
    kube[key] = value;
  }
  const flags = kube as KubeFlags;
  if (flags.requestTimeout !== undefined) requestTimeoutMs(flags.requestTimeout);
  for (const k of ['namespace', 'context', 'cluster', 'user', 'as', 'kubeconfig'] as const) {
    if (flags[k] === '') throw new UsageError(`--${k}: an empty value`);
  }
  return { kube: flags, rest };
}

const UNIT_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6 };

/** kubectl's --request-timeout: 0, a bare number of seconds, or a Go duration (1h2m3.5s, 500ms). */
export function requestTimeoutMs(text: string): number {
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const parts = /^(?:\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns))+$/.test(text) ? text.match(/\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns)/g) : null;
  if (!parts) throw new UsageError(`--request-timeout: ${JSON.stringify(text)} is not a duration (0, 30 for seconds, 500ms, 30s, 2m, 1h)`);
  let ms = 0;
  for (const p of parts) {
    const [, n, unit] = /^(\d+(?:\.\d+)?)(\D+)$/.exec(p) as RegExpExecArray;
    ms += Number(n) * (UNIT_MS[unit as string] as number);
  }
  return Math.ceil(ms);
}

/** The cluster a subcommand talks to, as the flags and the kubeconfig say. */
export interface Kube {
  /** client-node's KubeConfig whose current context is the effective one (flags applied, --as on its user). */
  readonly kubeConfig: KubeConfig;
  readonly context: string;
  /** --namespace, else the context's namespace, else default. */
  readonly namespace: string;
  /** 0: no limit. */
  readonly requestTimeoutMs: number;
  /** Where the configuration came from, for messages. */
  readonly source: string;
  /** A REST client for the effective context; every request() has the --request-timeout. */
  client(): RestClient;
}

/** The kubeconfig files kubectl would read, in order: --kubeconfig, else $KUBECONFIG's, else ~/.kube/config. */
export function kubeconfigFiles(flags: KubeFlags, env: NodeJS.ProcessEnv): string[] {
  if (flags.kubeconfig) return [flags.kubeconfig];
  const list = (env['KUBECONFIG'] ?? '').split(delimiter).filter(Boolean);
  if (list.length) return [...new Set(list)].filter((f) => existsSync(f));
  const home = env['HOME'] || env['USERPROFILE'] || homedir();
  const file = join(home, '.kube', 'config');
  return existsSync(file) ? [file] : [];
}

export async function loadKube(flags: KubeFlags, env: NodeJS.ProcessEnv): Promise<Kube> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const files = kubeconfigFiles(flags, env);
  const merged = new KubeConfig();
  let source: string;
  if (files.length === 0) {
    if (!env['KUBERNETES_SERVICE_HOST'] || !env['KUBERNETES_SERVICE_PORT']) {
      throw new KubeconfigError(env['KUBECONFIG'] ? `none of the KUBECONFIG files exists (${env['KUBECONFIG']})` : 'no kubeconfig: set --kubeconfig or KUBECONFIG, or create ~/.kube/config');
    }
    merged.loadFromCluster();
    source = 'in-cluster service account';
  } else {
    const clusters = new Map<string, Cluster>();
    const users = new Map<string, User>();
    const contexts = new Map<string, Context>();
    let current = '';
    for (const file of files) {
      const one = new KubeConfig();
      try {
        one.loadFromFile(file);
      } catch (e) {
        throw new KubeconfigError(`cannot load kubeconfig ${file}: ${(e as Error).message}`, { cause: e });
      }
      // The first file to set a name wins (clientcmd's merge).
      for (const c of one.getClusters()) if (!clusters.has(c.name)) clusters.set(c.name, c);
      for (const u of one.getUsers()) if (!users.has(u.name)) users.set(u.name, u);
      for (const c of one.getContexts()) if (!contexts.has(c.name)) contexts.set(c.name, c);
      if (!current && one.getCurrentContext()) current = one.getCurrentContext();
    }
    merged.loadFromOptions({ clusters: [...clusters.values()], users: [...users.values()], contexts: [...contexts.values()], currentContext: current });
    source = `kubeconfig ${files.join(delimiter)}`;
  }
  return effective(merged, flags, source);
}

/** Applies --context, --cluster, --user, --namespace and --as to a loaded KubeConfig (kubectl's overrides). */
function effective(kc: KubeConfig, flags: KubeFlags, source: string): Kube {
  const contextName = flags.context ?? kc.getCurrentContext();
  const ctx = contextName ? kc.getContextObject(contextName) : null;
  if (flags.context && !ctx) throw new KubeconfigError(`${source}: context ${JSON.stringify(flags.context)} not found`);
  const clusterName = flags.cluster ?? ctx?.cluster;
  const userName = flags.user ?? ctx?.user;
  if (!clusterName) throw new KubeconfigError(`${source}: no current context${contextName ? ` (current-context ${JSON.stringify(contextName)} not found)` : ''}; give --context, or --cluster and --user`);
  const cluster = kc.getCluster(clusterName);
  if (!cluster) throw new KubeconfigError(`${source}: cluster ${JSON.stringify(clusterName)} not found`);
  const found = userName ? kc.getUser(userName) : null;
  if (userName && !found && flags.user) throw new KubeconfigError(`${source}: user ${JSON.stringify(flags.user)} not found`);
  const user: User = { ...(found ?? { name: 'kubectl-retina-anonymous' }), ...(flags.as ? { impersonateUser: flags.as } : {}) };
  const namespace = flags.namespace ?? (ctx?.namespace || 'default');
  const name = contextName || 'kubectl-retina';
  const out = new (kc.constructor as typeof KubeConfig)();
  out.loadFromOptions({
    clusters: kc.getClusters(),
    users: [...kc.getUsers().filter((u) => u.name !== user.name), user],
    contexts: [...kc.getContexts().filter((c) => c.name !== name), { name, cluster: cluster.name, user: user.name, namespace }],
    currentContext: name,
  });
  const timeout = flags.requestTimeout === undefined ? 0 : requestTimeoutMs(flags.requestTimeout);
  return {
    kubeConfig: out,
    context: name,
    namespace,
    requestTimeoutMs: timeout,
    source,
    client: () => withRequestTimeout(createRestClient(restConfigFromKubeConfig(out, source), { userAgent: 'kubectl-retina' }), timeout),
  };
}

/** Every request() without a timeout of its own gets `ms` (streams are long-lived and keep none). */
function withRequestTimeout(c: RestClient, ms: number): RestClient {
  if (!ms) return c;
  return {
    request: (method, path, o = {}) => c.request(method, path, { timeoutMs: ms, ...o }),
    stream: (path, o) => c.stream(path, o),
    bytesReceived: () => c.bytesReceived(),
    config: c.config,
    close: () => c.close(),
  };
}

/**
 * A subcommand's arguments without kubectl's flags, and those flags: the ones the main entry took out
 * (`kube`) with any still in `argv` (a subcommand called directly, as tests do) over them.
 */
export function withKubeFlags(argv: readonly string[], kube: KubeFlags = {}): { kube: KubeFlags; rest: string[] } {
  const own = splitKubeFlags(argv);
  return { kube: { ...kube, ...own.kube }, rest: own.rest };
}
