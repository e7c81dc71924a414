/**
 * `kubectl retina shell` (Retina's shell/shell.go): on a node, a host-network pod from the shell image,
 * attached (stdin and a terminal) until the shell ends, then deleted, also when the session is aborted
 * (Ctrl-C outside a terminal, SIGTERM, a lost connection); in a pod, an ephemeral container in the pod's
 * network namespace, attached the same way, which ends with the session (stdinOnce: Kubernetes cannot
 * remove an ephemeral container, so its process ends when the session closes its stdin).
 */
import type { Readable, Writable } from 'node:stream';
import { attachToPod, type RestClient, type TerminalSize } from '../k8s/index.js';
import { addEphemeralContainer, containerStatus, createPod, deletePod, getPod, linuxNode, waitForContainerRunning, DebugError } from './cluster.js';
import { SHELL_CONTAINER, ephemeralShellContainer, nodeShellPod, randomName, type ShellOptions } from './pods.js';

export type ShellTarget = { readonly kind: 'node'; readonly node: string } | { readonly kind: 'pod'; readonly pod: string };

/** Retina's (kubectl's) resource argument: NODE, node/NAME, nodes/NAME, no/NAME, pod/NAME, pods/NAME, po/NAME. */
export function parseTarget(arg: string): ShellTarget {
  const i = arg.indexOf('/');
  if (i < 0) {
    if (!arg) throw new DebugError('name a node (NODE) or a pod (pods/NAME)');
    return { kind: 'node', node: arg };
  }
  const type = arg.slice(0, i).toLowerCase().replace(/\.v1$|\.core$|\.v1\.core$/, '');
  const name = arg.slice(i + 1);
  if (!name || name.includes('/')) throw new DebugError(`${JSON.stringify(arg)}: expected TYPE/NAME (node/NAME or pods/NAME)`);
  if (['node', 'nodes', 'no'].includes(type)) return { kind: 'node', node: name };
  if (['pod', 'pods', 'po'].includes(type)) return { kind: 'pod', pod: name };
  throw new DebugError(`unsupported resource type ${JSON.stringify(arg.slice(0, i))}: a node (NODE) or a pod (pods/NAME)`);
}

export interface ShellRequest {
  readonly target: ShellTarget;
  /** The node pod's namespace, and the pod's. */
  readonly namespace: string;
  readonly options: ShellOptions;
  /** How long to wait for the shell's container to run. */
  readonly timeoutMs: number;
}

export interface ShellIo {
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly stderr: Writable;
  /**
   * The local stdin is a terminal: the container gets a TTY (kubectl debug -it). Otherwise (a pipe, a
   * script) the shell reads stdin without one and its end ends the shell: with a TTY the runtime stops
   * sending output once the shell exits, and a script's last lines could be lost (seen on the real node:
   * the output of the command before `exit` missing), besides the terminal's echo of every line typed.
   */
  readonly tty: boolean;
  /** The local terminal's size, sent to the container's TTY. */
  readonly terminal?: TerminalSize;
  /** Ends the session (the pod is still deleted). */
  readonly signal: AbortSignal;
  /** What happens, for the user. */
  readonly notes: { started(what: string): void; attaching(): void; ended(what: string): void };
}

export interface ShellOutcome {
  /** The shell's exit code when it ended on its own (from the container's status), else undefined. */
  readonly exitCode?: number;
  /** The pod, or the pod of the ephemeral container. */
  readonly pod: string;
  readonly container: string;
}

export async function runShell(client: RestClient, req: ShellRequest, io: ShellIo): Promise<ShellOutcome> {
  return req.target.kind === 'node' ? inNode(client, req.target.node, req, io) : inPod(client, req.target.pod, req, io);
}

async function attach(client: RestClient, namespace: string, pod: string, container: string, io: ShellIo): Promise<void> {
  io.notes.attaching();
  await attachToPod(client.config, {
    namespace, pod, container, stdin: io.stdin, stdout: io.stdout, stderr: io.stderr, tty: io.tty,
    ...(io.terminal ? { terminal: io.terminal } : {}), signal: io.signal, userAgent: 'kubectl-retina',
  });
}

async function inNode(client: RestClient, node: string, req: ShellRequest, io: ShellIo): Promise<ShellOutcome> {
  await linuxNode(client, node);
  const pod = nodeShellPod(randomName('retina-shell'), req.namespace, node, req.options, io.tty);
  const name = pod.metadata.name;
  await createPod(client, pod);
  io.notes.started(`host-network pod ${req.namespace}/${name} on node ${node} (image ${req.options.image})`);
  try {
    await waitForContainerRunning(client, req.namespace, name, SHELL_CONTAINER, req.timeoutMs, io.signal);
    await attach(client, req.namespace, name, SHELL_CONTAINER, io);
    const code = await exitCode(client, req.namespace, name, SHELL_CONTAINER);
    return { pod: name, container: SHELL_CONTAINER, ...(code === undefined ? {} : { exitCode: code }) };
  } finally {
    await deletePod(client, req.namespace, name);
    io.notes.ended(`pod ${req.namespace}/${name} deleted`);
  }
}

async function inPod(client: RestClient, podName: string, req: ShellRequest, io: ShellIo): Promise<ShellOutcome> {
  const pod = await getPod(client, req.namespace, podName);
  const node = pod.spec?.nodeName;
  if (!node) throw new DebugError(`pod ${req.namespace}/${podName} is not scheduled on a node yet`);
  await linuxNode(client, node);
  const container = randomName('retina-shell');
  await addEphemeralContainer(client, req.namespace, podName, ephemeralShellContainer(container, req.options, io.tty));
  io.notes.started(`ephemeral container ${container} in pod ${req.namespace}/${podName} on node ${node} (image ${req.options.image})`);
  await waitForContainerRunning(client, req.namespace, podName, container, req.timeoutMs, io.signal);
  try {
    await attach(client, req.namespace, podName, container, io);
  } finally {
    io.notes.ended(`ephemeral container ${container} ends with the session (its stdin closed)`);
  }
  const code = await exitCode(client, req.namespace, podName, container);
  return { pod: podName, container, ...(code === undefined ? {} : { exitCode: code }) };
}

/** The container's exit code once it terminated (waits up to 3 s for the status to say so). */
async function exitCode(client: RestClient, namespace: string, pod: string, container: string): Promise<number | undefined> {
  for (let i = 0; i < 12; i++) {
    const s = containerStatus(await getPod(client, namespace, pod), container);
    const t = s?.state?.terminated;
    if (t) return t.exitCode;
    await new Promise((r) => setTimeout(r, 250));
  }
  return undefined;
}
