/**
 * Composition root of the kubectl plugin `kubectl-retina` (`kubectl retina ...` once on PATH):
 * `capture create|list|delete|download`, `shell`, `bpftrace`, `why`, `migrate-values`. kubectl's common flags (--kubeconfig, --context, -n, --as,
 * ...: src/cli/kube-flags.ts) are taken out of the command line here, wherever they stand, and handed
 * to the subcommand: every subcommand gets them, and one that does not talk to the cluster ignores them.
 * Each subcommand's module is loaded when it is run (`why` need not load the capture client's S3,
 * blob and tar modules before it can answer, nor `capture` grpc-js).
 */
import { version } from './command.js';
import { KUBE_FLAGS_USAGE, splitKubeFlags, type KubeFlags } from './kube-flags.js';

export const USAGE = `usage: kubectl-retina capture <create|list|delete|download> [flags]   (--help on each)
       kubectl-retina shell (NODE | pods/NAME) [flags]   (a shell with networking tools on a node or in a pod)
       kubectl-retina bpftrace NODE [flags]              (drops, RSTs, socket errors, retransmits on a node)
       kubectl-retina why SRC DST[:PORT] [-o json]       (why SRC cannot reach DST: --help)
       kubectl-retina migrate-values -f RETINA_VALUES [-o OUT]
       kubectl-retina options    (kubectl's flags every subcommand takes: --kubeconfig, --context, -n, --as, ...)
       kubectl-retina version`;

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let kube: KubeFlags;
  let args: string[];
  try {
    ({ kube, rest: args } = splitKubeFlags(argv));
  } catch (e) {
    process.stderr.write(`kubectl-retina: ${(e as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const [group, sub, ...rest] = args;
  if (group === 'version' || group === '--version') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (group === 'options') {
    process.stdout.write(`${KUBE_FLAGS_USAGE}\n`);
    return 0;
  }
  if (group === undefined || group === '--help' || group === '-h' || group === 'help') {
    process.stdout.write(USAGE + '\n');
    return group === undefined ? 2 : 0;
  }
  if (group === 'migrate-values') return (await import('./migrate-values.js')).runMigrateValues(args.slice(1));
  if (group === 'shell') return (await import('./debug/shell.js')).runShellCommand(args.slice(1), env, kube);
  if (group === 'bpftrace') return (await import('./debug/bpftrace.js')).runBpftraceCommand(args.slice(1), env, kube);
  if (group === 'why') return (await import('./why.js')).runWhy(args.slice(1), env, kube);
  if (group !== 'capture') {
    process.stderr.write(`kubectl-retina: unknown command ${JSON.stringify(group)}\n${USAGE}\n`);
    return 2;
  }
  switch (sub) {
    case 'create': return (await import('./capture/create.js')).runCreate(rest, env, kube);
    case 'list': return (await import('./capture/list.js')).runList(rest, env, kube);
    case 'delete': return (await import('./capture/delete.js')).runDelete(rest, env, kube);
    case 'download': return (await import('./capture/download.js')).runDownload(rest, { env, kube });
    default:
      process.stderr.write(`kubectl-retina capture: unknown subcommand ${JSON.stringify(sub ?? '')}\n${USAGE}\n`);
      return 2;
  }
}
