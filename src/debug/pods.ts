/**
 * The pods `kubectl retina shell` and `kubectl retina bpftrace` make (Retina's shell/manifests.go and
 * shell/trace.go): the shell's host-network pod on a node, its ephemeral container in a pod, and the
 * trace pod. Pure: a spec from options, nothing sent.
 */
import { randomBytes } from 'node:crypto';

/** Labels on every pod these commands make, so a leftover can be found (`-l app=retina-shell`). */
export const SHELL_APP = 'retina-shell';
export const TRACE_APP = 'retina-trace';
export const SHELL_CONTAINER = 'retina-shell';
export const TRACE_CONTAINER = 'retina-trace';

/** The capabilities the trace pod gets (Retina's TraceCapabilities less SYS_RESOURCE, see traceCapabilities). */
export const TRACE_CAPABILITIES: readonly string[] = ['SYS_ADMIN', 'BPF', 'PERFMON', 'NET_ADMIN', 'SYS_PTRACE', 'SYSLOG'];

export interface ShellOptions {
  readonly image: string;
  readonly mountHostFilesystem: boolean;
  readonly allowHostFilesystemWrite: boolean;
  readonly hostPid: boolean;
  /** Linux capability names without CAP_ (NET_ADMIN), added to an empty set (ALL is dropped). */
  readonly capabilities: readonly string[];
  readonly appArmorUnconfined: boolean;
  readonly seccompUnconfined: boolean;
}

/** `retina-shell-<5 random [a-z0-9]>`, as Retina names its pods and containers. */
export function randomName(prefix: string): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return `${prefix}-${[...randomBytes(5)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

/** CAP_NET_ADMIN, net_admin -> NET_ADMIN; an error naming the value when it is no capability name. */
export function capabilityNames(list: readonly string[]): string[] {
  return list.map((c) => {
    const n = c.trim().toUpperCase().replace(/^CAP_/, '');
    if (!/^[A-Z_]{2,32}$/.test(n)) throw new Error(`--capabilities: ${JSON.stringify(c)} is not a capability name (NET_ADMIN, SYS_ADMIN, ...)`);
    return n;
  });
}

interface SecurityContext {
  capabilities: { drop: string[]; add: string[] };
  appArmorProfile?: { type: 'Unconfined' };
  seccompProfile?: { type: 'Unconfined' };
  privileged?: boolean;
}

function securityContext(add: readonly string[], appArmorUnconfined: boolean, seccompUnconfined: boolean): SecurityContext {
  return {
    capabilities: { drop: ['ALL'], add: [...add] },
    ...(appArmorUnconfined ? { appArmorProfile: { type: 'Unconfined' as const } } : {}),
    ...(seccompUnconfined ? { seccompProfile: { type: 'Unconfined' as const } } : {}),
  };
}

export interface PodSpecOut {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
}

/**
 * The shell pod on `node`: host network (the node's network namespace), stdin for the attach and a TTY when
 * the session is a terminal (`tty`, as kubectl debug -it; a script's stdin goes to the shell without one),
 * the host's `/` at /host (read-only unless allowHostFilesystemWrite) and its /run with
 * --mount-host-filesystem, host PID with --host-pid. Never restarted; deleted by the command when the session ends.
 */
export function nodeShellPod(name: string, namespace: string, node: string, o: ShellOptions, tty = true): PodSpecOut {
  const mountHost = o.mountHostFilesystem || o.allowHostFilesystemWrite;
  const container: Record<string, unknown> = {
    name: SHELL_CONTAINER, image: o.image, imagePullPolicy: 'IfNotPresent', stdin: true, stdinOnce: true, tty,
    securityContext: securityContext(o.capabilities, o.appArmorUnconfined, o.seccompUnconfined),
    ...(mountHost ? {
      volumeMounts: [
        { name: 'host-filesystem', mountPath: '/host', readOnly: !o.allowHostFilesystemWrite },
        { name: 'run', mountPath: '/run' },
      ],
    } : {}),
  };
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace, labels: { app: SHELL_APP, 'retina.sh/shell-target-node': node.slice(0, 63) } },
    spec: {
      nodeName: node, restartPolicy: 'Never', hostNetwork: true, hostPID: o.hostPid, terminationGracePeriodSeconds: 0,
      tolerations: [{ operator: 'Exists' }],
      containers: [container],
      ...(mountHost ? { volumes: [{ name: 'host-filesystem', hostPath: { path: '/' } }, { name: 'run', hostPath: { path: '/run' } }] } : {}),
    },
  };
}

/**
 * The shell's ephemeral container in a pod (its network namespace): host filesystem, host PID,
 * AppArmor and seccomp apply to nodes only (as Retina). stdinOnce: the container ends with the session.
 * A TTY when the session is a terminal (`tty`), as for the node's pod.
 */
export function ephemeralShellContainer(name: string, o: ShellOptions, tty = true): Record<string, unknown> {
  return {
    name, image: o.image, imagePullPolicy: 'IfNotPresent', stdin: true, stdinOnce: true, tty,
    securityContext: securityContext(o.capabilities, false, false),
  };
}

/**
 * The trace pod on `node` (Retina's hostNetworkPodForTrace): host network and PID, the capabilities
 * bpftrace needs, seccomp and AppArmor unconfined, and the host's tracefs at /sys/kernel/tracing (bpftrace
 * reads each tracepoint's format and id there; a hostPath instead of Retina's entrypoint that mounts it,
 * which would need SYS_ADMIN in the mount namespace and a shell entrypoint). Its process only waits: the
 * command runs bpftrace through pods/exec.
 */
export function tracePod(name: string, namespace: string, node: string, image: string): PodSpecOut {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace, labels: { app: TRACE_APP, 'retina.sh/component': 'trace', 'retina.sh/trace-target-node': node.slice(0, 63) } },
    spec: {
      nodeName: node, restartPolicy: 'Never', hostNetwork: true, hostPID: true, terminationGracePeriodSeconds: 0,
      tolerations: [{ operator: 'Exists' }],
      containers: [{
        name: TRACE_CONTAINER, image, imagePullPolicy: 'IfNotPresent',
        command: ['sleep', 'infinity'],
        securityContext: { ...securityContext(TRACE_CAPABILITIES, true, true), privileged: false },
        volumeMounts: [{ name: 'tracefs', mountPath: '/sys/kernel/tracing', readOnly: true }],
      }],
      volumes: [{ name: 'tracefs', hostPath: { path: '/sys/kernel/tracing', type: 'Directory' } }],
    },
  };
}
