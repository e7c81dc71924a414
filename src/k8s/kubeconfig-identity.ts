/**
 * Who the agent is towards the API server, without any secret (for `retina-agent diagnose`): the
 * kubeconfig's context, cluster and user names, which kinds of credential it holds, and a client
 * certificate's subject; in-cluster, the service account (the `sub` claim of the token, which names
 * it; the token itself is never shown).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { LoadRestConfigOptions } from './kubeconfig.js';

type Obj = Record<string, unknown>;

const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface KubeIdentity {
  readonly context?: string | undefined;
  readonly cluster?: string | undefined;
  readonly user?: string | undefined;
  /** Kinds of credential present: token, tokenFile, client-certificate, exec, auth-provider, ... (names only). */
  readonly credentials?: readonly string[];
  readonly certificateSubject?: string | undefined;
  readonly serviceAccount?: string | undefined;
  readonly error?: string;
}

function subjectOf(pem: Buffer | undefined): string | undefined {
  if (!pem) return undefined;
  try {
    return new X509Certificate(pem).subject.replace(/\n/g, ', ');
  } catch {
    return undefined;
  }
}

/** The JWT's `sub` claim (its payload is not secret; the signature is what is). */
export function tokenSubject(jwt: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof payload.sub === 'string' ? payload.sub : undefined;
  } catch {
    return undefined;
  }
}

export function describeKubeconfig(opts: Pick<LoadRestConfigOptions, 'kubeconfig' | 'env' | 'serviceAccountDir'>): KubeIdentity {
  try {
    if (!opts.kubeconfig) {
      const path = opts.serviceAccountDir ? join(opts.serviceAccountDir, 'token') : SA_TOKEN;
      return { serviceAccount: tokenSubject(readFileSync(path, 'utf8').trim()) ?? '(token without a subject)' };
    }
    const doc = (parseYaml(readFileSync(opts.kubeconfig, 'utf8')) ?? {}) as Obj;
    const find = (list: unknown, name: unknown): Obj | undefined => ((list as Obj[] | undefined) ?? []).find((x) => x['name'] === name);
    const context = doc['current-context'] as string | undefined;
    const ctx = find(doc['contexts'], context)?.['context'] as Obj | undefined;
    const userName = ctx?.['user'] as string | undefined;
    const user = (find(doc['users'], userName)?.['user'] ?? {}) as Obj;
    const base = dirname(opts.kubeconfig);
    const cert = typeof user['client-certificate-data'] === 'string'
      ? Buffer.from(user['client-certificate-data'], 'base64')
      : typeof user['client-certificate'] === 'string' ? readFileSync(isAbsolute(user['client-certificate']) ? user['client-certificate'] : join(base, user['client-certificate'])) : undefined;
    return { context, cluster: ctx?.['cluster'] as string | undefined, user: userName, credentials: Object.keys(user).sort(), certificateSubject: subjectOf(cert) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}
