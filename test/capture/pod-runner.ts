/**
 * Plays the kubelet for one capture pod on the test control plane (kwok runs no containers): reads
 * the pod's container environment, resolves its fieldRefs, maps the Job's hostPath into kwok's exec
 * root (`.cache/k8s/run/exec-root/host<dir>`, which is the node's disk for the download's helper pod)
 * and runs the real `retina-capture` with the cluster's kubeconfig (it annotates its pod). Used by
 * `capture-e2e.test.ts` and by the README's walkthrough (`hack/capture/run-pod.mjs`), so the
 * walkthrough's tool is the tested one.
 */
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { parseFlags, type Flags } from '../../src/cli/args.js';
import { EXEC_ROOT, KUBECONFIG, eventually } from '../integration/harness.js';
import { runWorkload, type Run } from './workload-run.js';

export interface PodRunnerOptions {
  readonly kubeconfig?: string;
  /** kwok's exec root (the node's `/`); default `.cache/k8s/run/exec-root`. */
  readonly execRoot?: string;
}

/** The capture pod's container environment as its kubelet would give it, its host paths mapped into `execRoot`. */
export function capturePodEnv(pod: V1Pod, opts: PodRunnerOptions = {}): Record<string, string> {
  const c = pod.spec?.containers[0];
  if (!c) throw new Error(`pod ${pod.metadata?.name ?? '?'} has no container`);
  const fields: Record<string, string> = {
    'spec.nodeName': pod.spec?.nodeName ?? '',
    'metadata.name': pod.metadata?.name ?? '',
    'metadata.namespace': pod.metadata?.namespace ?? '',
    'status.podIP': pod.status?.podIP ?? '',
    'status.hostIP': pod.status?.hostIP ?? '',
  };
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    const path = e.valueFrom?.fieldRef?.fieldPath;
    if (e.value !== undefined) env[e.name] = e.value;
    else if (path !== undefined) {
      if (!(path in fields)) throw new Error(`env ${e.name}: fieldRef ${path} is not one this runner resolves`);
      env[e.name] = fields[path] as string;
    } else if (e.valueFrom) throw new Error(`env ${e.name}: only values and fieldRefs are supported (secrets are not played)`);
  }
  const hostRoot = join(opts.execRoot ?? EXEC_ROOT, 'host');
  if (env['HOSTPATH']) env['HOSTPATH'] = join(hostRoot, env['HOSTPATH']);
  if (env['RETINA_CAPTURE_HOSTPATH_BASE_DIR']) env['RETINA_CAPTURE_HOSTPATH_BASE_DIR'] = join(hostRoot, env['RETINA_CAPTURE_HOSTPATH_BASE_DIR']);
  env['KUBECONFIG'] = opts.kubeconfig ?? KUBECONFIG;
  return env;
}

function core(kubeconfig: string): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return kc.makeApiClient(CoreV1Api);
}

/** Waits for the one pod of capture `name` (label `capture-name`) to be scheduled; fails when there are several. */
export async function findCapturePod(namespace: string, name: string, opts: PodRunnerOptions & { timeoutMs?: number } = {}): Promise<V1Pod> {
  const api = core(opts.kubeconfig ?? KUBECONFIG);
  return eventually(`the pod of capture ${namespace}/${name}`, opts.timeoutMs ?? 60_000, async () => {
    const pods = (await api.listNamespacedPod({ namespace, labelSelector: `retina.sh/app=capture,capture-name=${name}` })).items
      .filter((p) => !p.metadata?.deletionTimestamp);
    if (pods.length > 1) throw new Error(`capture ${namespace}/${name} has ${pods.length} pods; this runner plays one (use --node-names with one node)`);
    return pods[0]?.spec?.nodeName ? pods[0] : undefined;
  });
}

/** Starts the real workload for `pod`, as its kubelet would. */
export function playCapturePod(pod: V1Pod, opts: PodRunnerOptions = {}): Run {
  return runWorkload(capturePodEnv(pod, opts));
}

/**
 * Creates a kwok node whose only address is InternalIP 127.0.0.1 (the API server reaches such a node
 * for pods/exec, which `capture download` uses) and waits until it is Ready. Existing: left as is.
 */
export async function addLocalNode(name: string, opts: PodRunnerOptions = {}): Promise<void> {
  const api = core(opts.kubeconfig ?? KUBECONFIG);
  const existing = await api.readNode({ name }).catch(() => undefined);
  if (!existing) {
    await api.createNode({
      body: {
        metadata: { name, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': name }, annotations: { 'kwok.x-k8s.io/node': 'fake' } },
        status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }] },
      },
    });
  }
  await eventually(`node ${name} Ready`, 30_000, async () =>
    (await api.readNode({ name })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
}

const USAGE = `usage: hack/capture/run-pod.mjs --name CAPTURE [-n NAMESPACE] [--kubeconfig FILE]
       hack/capture/run-pod.mjs --add-node NODE [--kubeconfig FILE]
Plays the kubelet for the one pod of a capture on the test control plane: runs bin/retina-capture
with the pod's environment (hostPath under .cache/k8s/run/exec-root/host). --add-node creates a kwok
node reachable for pods/exec (address 127.0.0.1), which 'capture download' needs.`;

/** The walkthrough's entry: exit status 0 when the workload succeeded, 1 when it failed, 2 on bad arguments. */
export async function runPodMain(argv: readonly string[]): Promise<number> {
  let flags: Flags;
  try {
    flags = parseFlags(argv, { strings: { name: undefined, namespace: 'default', kubeconfig: undefined, 'add-node': undefined }, short: { n: 'namespace' } });
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const kubeconfig = flags.str('kubeconfig');
  const opts: PodRunnerOptions = kubeconfig ? { kubeconfig } : {};
  const node = flags.str('add-node');
  if (node) {
    await addLocalNode(node, opts);
    process.stdout.write(`node ${node} Ready (InternalIP 127.0.0.1)\n`);
    return 0;
  }
  const name = flags.str('name');
  if (!name) {
    process.stderr.write(`--name is required\n${USAGE}\n`);
    return 2;
  }
  const pod = await findCapturePod(flags.str('namespace') || 'default', name, opts);
  process.stdout.write(`playing pod ${pod.metadata?.namespace}/${pod.metadata?.name} on node ${pod.spec?.nodeName}\n`);
  const w = playCapturePod(pod, opts);
  w.child.stderr?.pipe(process.stderr);
  w.child.stdout?.pipe(process.stdout);
  const stop = (): void => void w.child.kill('SIGTERM');
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const done = await w.done;
  if (done.code !== 0) process.stderr.write(`retina-capture exited ${done.code}: ${done.termination}\n`);
  return done.code === 0 ? 0 : 1;
}
