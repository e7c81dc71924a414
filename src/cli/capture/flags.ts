/**
 * What every `kubectl-retina capture ...` subcommand shares beside the flag parser (src/cli/args.ts):
 * the kube flags and the API client from --kubeconfig/KUBECONFIG/~/.kube/config/in-cluster.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createRestClient, loadRestConfig, type RestClient } from '../../k8s/index.js';

/** --kubeconfig, else $KUBECONFIG (first entry), else ~/.kube/config when it exists, else in-cluster. */
export async function kubeClient(kubeconfig: string | undefined, env: NodeJS.ProcessEnv): Promise<RestClient> {
  let path = kubeconfig || env['KUBECONFIG']?.split(':').find(Boolean);
  if (!path && existsSync(join(homedir(), '.kube', 'config'))) path = join(homedir(), '.kube', 'config');
  return createRestClient(await loadRestConfig({ kubeconfig: path, env }), { userAgent: 'kubectl-retina' });
}

/** The kube flags every subcommand takes (Retina: global --name, kubectl's --namespace, --kubeconfig). */
export const KUBE_FLAGS = { name: 'retina-capture', namespace: 'default', kubeconfig: undefined } as const;
