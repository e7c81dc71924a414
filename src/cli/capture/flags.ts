/**
 * What every `kubectl-retina capture ...` subcommand shares beside the flag parser (src/cli/args.ts)
 * and kubectl's common flags (src/cli/kube-flags.ts): Retina's --name default, and the cluster the
 * subcommand talks to, or the message why there is none.
 */
import { loadKube, type Kube, type KubeFlags } from '../kube-flags.js';

/** Retina's global --name flag and its default. */
export const NAME_FLAG = { name: 'retina-capture' } as const;

/** The cluster from kubectl's flags and the kubeconfig; undefined (the error printed) when it cannot be loaded. */
export async function connect(kube: KubeFlags, env: NodeJS.ProcessEnv, command: string, stderr: { write(s: string): unknown } = process.stderr): Promise<Kube | undefined> {
  try {
    return await loadKube(kube, env);
  } catch (e) {
    stderr.write(`kubectl-retina ${command}: ${(e as Error).message}\n`);
    return undefined;
  }
}
