/**
 * kubectl-style flags for `kubectl-retina capture ...` (Retina's are cobra's): `--flag value`,
 * `--flag=value`, booleans as `--flag`, `--flag=true|false`; `-n NS`, `-A`, `-o DIR`.
 * Shared helpers: the API client from --kubeconfig/KUBECONFIG/~/.kube/config/in-cluster.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createRestClient, loadRestConfig, type RestClient } from '../../k8s/index.js';

export class FlagError extends Error {
  override readonly name = 'FlagError';
}

export interface FlagSpec {
  readonly strings: Readonly<Record<string, string | undefined>>;
  readonly booleans: Readonly<Record<string, boolean>>;
  readonly short?: Readonly<Record<string, string>>;
}

export interface Flags {
  str(name: string): string | undefined;
  bool(name: string): boolean;
  list(name: string): string[];
  int(name: string): number;
  has(name: string): boolean;
}

const TRUE = new Set(['true', '1', 't', 'TRUE', 'True']);
const FALSE = new Set(['false', '0', 'f', 'FALSE', 'False']);

export function parseKubectlFlags(argv: readonly string[], spec: FlagSpec): Flags {
  const strings = new Map<string, string | undefined>(Object.entries(spec.strings));
  const booleans = new Map<string, boolean>(Object.entries(spec.booleans));
  const given = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i] as string;
    if (/^-[A-Za-z]$/.test(a) && spec.short?.[a.slice(1)]) a = `--${spec.short[a.slice(1)]}`;
    if (!a.startsWith('--')) throw new FlagError(`unexpected argument ${JSON.stringify(a)}`);
    const eq = a.indexOf('=');
    const name = a.slice(2, eq < 0 ? undefined : eq);
    const inline = eq < 0 ? undefined : a.slice(eq + 1);
    if (booleans.has(name)) {
      if (inline === undefined) booleans.set(name, true);
      else if (TRUE.has(inline)) booleans.set(name, true);
      else if (FALSE.has(inline)) booleans.set(name, false);
      else throw new FlagError(`--${name}: ${JSON.stringify(inline)} is not true or false`);
    } else if (strings.has(name)) {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new FlagError(`--${name} needs a value`);
      strings.set(name, v);
    } else throw new FlagError(`unknown flag --${name}`);
    given.add(name);
  }
  return {
    str: (n) => strings.get(n),
    bool: (n) => booleans.get(n) ?? false,
    list: (n) => (strings.get(n) ?? '').split(',').map((x) => x.trim()).filter(Boolean),
    int(n) {
      const v = strings.get(n) ?? '';
      if (!/^\d+$/.test(v)) throw new FlagError(`--${n}: ${JSON.stringify(v)} is not a non-negative integer`);
      return Number(v);
    },
    has: (n) => given.has(n),
  };
}

/** --kubeconfig, else $KUBECONFIG (first entry), else ~/.kube/config when it exists, else in-cluster. */
export async function kubeClient(kubeconfig: string | undefined, env: NodeJS.ProcessEnv): Promise<RestClient> {
  let path = kubeconfig || env['KUBECONFIG']?.split(':').find(Boolean);
  if (!path && existsSync(join(homedir(), '.kube', 'config'))) path = join(homedir(), '.kube', 'config');
  return createRestClient(await loadRestConfig({ kubeconfig: path, env }), { userAgent: 'kubectl-retina' });
}

/** The kube flags every subcommand takes (Retina: global --name, kubectl's --namespace, --kubeconfig). */
export const KUBE_FLAGS = { name: 'retina-capture', namespace: 'default', kubeconfig: undefined } as const;
