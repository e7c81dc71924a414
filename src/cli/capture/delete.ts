/**
 * `kubectl-retina capture delete --name NAME [-n NS]`: deletes the Capture resource when there is one
 * (the operator's finalizer then deletes its Jobs and Secrets), else the capture's Jobs and the
 * Secrets made for it, as Retina's CLI does (src/capture/client).
 */
import { deleteCapture } from '../../capture/client/index.js';
import { parseFlags, UsageError } from '../args.js';
import { withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { NAME_FLAG, connect } from './flags.js';

export const DELETE_USAGE = 'usage: kubectl-retina capture delete --name NAME [-n NAMESPACE] [kubectl\'s flags: kubectl-retina options]';

export async function runDelete(argv: readonly string[], env: NodeJS.ProcessEnv, kubeFlags: KubeFlags = {}): Promise<number> {
  let f;
  let kubeArgs: KubeFlags;
  try {
    const split = withKubeFlags(argv, kubeFlags);
    kubeArgs = split.kube;
    f = parseFlags(split.rest, { strings: { ...NAME_FLAG }, booleans: { help: false }, short: { h: 'help' } });
  } catch (e) {
    process.stderr.write(`kubectl-retina capture delete: ${(e as UsageError).message}\n${DELETE_USAGE}\n`);
    return 2;
  }
  if (f.bool('help')) {
    process.stdout.write(DELETE_USAGE + '\n');
    return 0;
  }
  const kube = await connect(kubeArgs, env, 'capture delete');
  if (!kube) return 1;
  const ns = kube.namespace;
  const name = f.str('name') as string;
  const client = kube.client();
  try {
    const r = await deleteCapture(client, ns, name);
    if (r.kind === 'resource') {
      process.stdout.write(`capture ${ns}/${name} deleted (Capture resource; the operator deletes its jobs and secrets)\n`);
      return 0;
    }
    if (!r.jobs && !r.secrets) {
      process.stderr.write(`kubectl-retina capture delete: no capture ${ns}/${name}\n`);
      return 1;
    }
    process.stdout.write(`capture ${ns}/${name} deleted: ${r.jobs} job(s), ${r.secrets} secret(s)\n`);
    return 0;
  } catch (e) {
    process.stderr.write(`kubectl-retina capture delete: ${(e as Error).message}\n`);
    return 1;
  } finally {
    client.close();
  }
}
