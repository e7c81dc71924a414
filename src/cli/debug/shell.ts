/**
 * `kubectl-retina shell NODE|pods/NAME`: Retina's flags and messages; the session is src/debug's.
 * The terminal is put in raw mode while attached when stdin is one (Ctrl-C then goes to the remote
 * shell, as with kubectl attach -it); outside a terminal (a pipe, a script) the shell reads stdin without a TTY
 * (kubectl debug -i: its end ends the shell, and no echo of the lines sent), and
 * Ctrl-C ends the session. Either way the node's pod is deleted when the session ends.
 */
import { capabilityNames, parseTarget, runShell, type ShellRequest } from '../../debug/index.js';
import { parseDurationMs } from '../../config/index.js';
import { parseFlags, UsageError, type Flags } from '../args.js';
import { connect } from '../capture/flags.js';
import { withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { IMAGE_FLAGS, IMAGE_USAGE, shellImage } from './image.js';
import { stopOnSignals } from './signals.js';

export const SHELL_USAGE = `usage: kubectl-retina shell (NODE | node/NAME | pods/NAME) [-n NAMESPACE] [flags] [kubectl's flags: kubectl-retina options]

Start a shell with networking tools on a node (a host-network pod, deleted when the shell ends) or in a
pod (an ephemeral container in its network namespace, which ends with the shell).
  -m, --mount-host-filesystem       the host's / at /host, read-only (nodes only)
  -w, --allow-host-filesystem-write the host's / at /host, writable (implies -m; nodes only)
      --host-pid                    the host's PID namespace (nodes only)
  -c, --capabilities A,B            capabilities to add (NET_ADMIN,NET_RAW for nft, iptables and tcpdump;
                                    SYS_ADMIN,BPF,PERFMON for bpftool and bpftrace; SYS_CHROOT for chroot /host)
      --apparmor-unconfined         AppArmor profile Unconfined (nodes only)
      --seccomp-unconfined          seccomp profile Unconfined (nodes only)
      --timeout 30s                 how long to wait for the shell's container to start
${IMAGE_USAGE}`;

export const SHELL_FLAGS = {
  strings: { ...IMAGE_FLAGS, capabilities: '', timeout: '30s' },
  booleans: { 'mount-host-filesystem': false, 'allow-host-filesystem-write': false, 'host-pid': false, 'apparmor-unconfined': false, 'seccomp-unconfined': false },
  short: { m: 'mount-host-filesystem', w: 'allow-host-filesystem-write', c: 'capabilities' },
  positionals: true,
};

/** Flags -> the shell request (namespace filled by the caller). */
export function shellRequest(f: Flags, env: NodeJS.ProcessEnv, namespace: string): ShellRequest {
  if (f.positionals.length !== 1) throw new UsageError(`expected one NODE or pods/NAME, got ${f.positionals.length}`);
  const timeoutMs = parseDurationMs(f.str('timeout') ?? '');
  if (timeoutMs === undefined || timeoutMs <= 0) throw new UsageError(`--timeout: ${JSON.stringify(f.str('timeout'))} is not a positive duration (30s, 2m)`);
  let target;
  let capabilities;
  try {
    target = parseTarget(f.positionals[0] as string);
    capabilities = capabilityNames(f.list('capabilities'));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return {
    target, namespace, timeoutMs,
    options: {
      image: shellImage(f, env), capabilities,
      mountHostFilesystem: f.bool('mount-host-filesystem'), allowHostFilesystemWrite: f.bool('allow-host-filesystem-write'),
      hostPid: f.bool('host-pid'), appArmorUnconfined: f.bool('apparmor-unconfined'), seccompUnconfined: f.bool('seccomp-unconfined'),
    },
  };
}

const err = (s: string): boolean => process.stderr.write(`kubectl-retina shell: ${s}\n`);

export async function runShellCommand(argv: readonly string[], env: NodeJS.ProcessEnv, kubeFlags: KubeFlags = {}): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(SHELL_USAGE + '\n');
    return 0;
  }
  let f: Flags;
  let kubeArgs: KubeFlags;
  try {
    const split = withKubeFlags(argv, kubeFlags);
    kubeArgs = split.kube;
    f = parseFlags(split.rest, SHELL_FLAGS);
    shellRequest(f, env, 'default'); // every flag checked before the cluster is asked
  } catch (e) {
    err(`${(e as Error).message}\n${SHELL_USAGE}`);
    return 2;
  }
  const kube = await connect(kubeArgs, env, 'shell');
  if (!kube) return 1;
  const req = shellRequest(f, env, kube.namespace);
  const client = kube.client();
  const tty = Boolean(process.stdin.isTTY);
  using stop = stopOnSignals((sig) => err(`${sig}: ending the session`));
  const out = process.stdout;
  const terminal = tty && out.isTTY ? {
    current: () => (out.columns && out.rows ? { width: out.columns, height: out.rows } : undefined),
    subscribe: (changed: () => void) => {
      out.on('resize', changed);
      return () => out.off('resize', changed);
    },
  } : undefined;
  try {
    const r = await runShell(client, req, {
      stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, signal: stop.signal, tty,
      ...(terminal ? { terminal } : {}),
      notes: {
        started: (what) => err(`starting ${what}`),
        attaching: () => {
          err(`attached${tty ? ': if no prompt shows, press Enter; exit or Ctrl-D ends the session' : ''}`);
          if (tty) process.stdin.setRawMode(true);
        },
        ended: (what) => {
          if (tty) process.stdin.setRawMode(false);
          err(what);
        },
      },
    });
    return r.exitCode ?? 0;
  } catch (e) {
    if (stop.by()) return 130;
    err((e as Error).message);
    return 1;
  } finally {
    if (tty) process.stdin.setRawMode(false);
    process.stdin.pause();
    client.close();
  }
}
