/**
 * `kubectl-retina capture list [-A]`: the captures of a namespace (or all), from their Jobs and
 * Capture resources (src/capture/client), as a table; and a capture's per-node progress line, which
 * `create` prints while it waits.
 */
import { listCaptures, type CaptureProgress } from '../../capture/client/index.js';
import { parseFlags, UsageError } from '../args.js';
import { withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { connect } from './flags.js';

export function printProgress(p: CaptureProgress): string {
  return `${p.name}: ${p.nodes.map((x) => `${x.node}=${x.state}`).join(' ')} (running ${p.active}, completed ${p.succeeded}, failed ${p.failed})`;
}

export const LIST_USAGE = 'usage: kubectl-retina capture list [-n NAMESPACE | -A/--all-namespaces] [kubectl\'s flags: kubectl-retina options]';

export async function runList(argv: readonly string[], env: NodeJS.ProcessEnv, kubeFlags: KubeFlags = {}): Promise<number> {
  let f;
  let kubeArgs: KubeFlags;
  try {
    const split = withKubeFlags(argv, kubeFlags);
    kubeArgs = split.kube;
    f = parseFlags(split.rest, { strings: {}, booleans: { 'all-namespaces': false, help: false }, short: { A: 'all-namespaces', h: 'help' } });
  } catch (e) {
    process.stderr.write(`kubectl-retina capture list: ${(e as UsageError).message}\n${LIST_USAGE}\n`);
    return 2;
  }
  if (f.bool('help')) {
    process.stdout.write(LIST_USAGE + '\n');
    return 0;
  }
  const kube = await connect(kubeArgs, env, 'capture list');
  if (!kube) return 1;
  const ns = f.bool('all-namespaces') ? undefined : kube.namespace;
  const client = kube.client();
  try {
    const captures = await listCaptures(client, ns);
    if (!captures.length) {
      process.stdout.write(`No captures found${ns ? ` in namespace ${ns}` : ''}.\n`);
      return 0;
    }
    const head = ['NAMESPACE', 'NAME', 'KIND', 'JOBS', 'ACTIVE', 'SUCCEEDED', 'FAILED', 'STATE', 'NODES'];
    const rows = captures.map((c) => [c.namespace, c.name, c.kind, String(c.jobs), String(c.active), String(c.succeeded), String(c.failed), c.state, c.nodes.join(',')]);
    const all = [head, ...rows];
    const w = head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
    process.stdout.write(all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i] as number))).join('  ')).join('\n') + '\n');
    return 0;
  } catch (e) {
    process.stderr.write(`kubectl-retina capture list: ${(e as Error).message}\n`);
    return 1;
  } finally {
    client.close();
  }
}
