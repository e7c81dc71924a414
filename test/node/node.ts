/**
 * The real-node suite's helper (issue 23): starts one real node (hack/node/node.sh: etcd,
 * kube-apiserver on the node's bridge address, controller-manager, scheduler, containerd + runc, the
 * CNI bridge, kubelet, kube-proxy) and always stops it, which restores the machine. One real node per
 * machine: node.sh takes a lock under /run naming this process; a node that `make node-up` started from
 * this checkout is reused and left running. It never skips: a node that cannot come up fails the test
 * with node.sh's output.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { createRestClient, isApiError, loadRestConfig, type RestClient } from '../../src/k8s/index.js';
import { dirLock, processAlive } from '../integration/dir-lock.js';
import { ROOT } from '../integration/harness.js';

const run = promisify(execFile);
export const NODE_SH = `${ROOT}hack/node/node.sh`;
export const NODE_KUBECONFIG = `${ROOT}.cache/node/kubeconfig`;
export const NODE_NAME = 'retina-node';
export const NODE_IP = '10.251.0.1';
export const BRIDGE = 'rtsnode0';
/** The `kubernetes` Service's ClusterIP (the first of hack/node/node.sh's Service range). */
export const API_SERVICE_IP = '10.252.0.1';
/** The kube-dns Service's ClusterIP (kubelet's clusterDNS), in front of the CoreDNS Deployment node.sh runs in kube-system. */
export const DNS_SERVICE_IP = '10.252.0.10';
export const POD_CIDR_PREFIX = '10.251.0.';
/** The node's pods' IPv6 range (dual stack: the bridge CNI's second host-local range, fd51:251::/64). */
export const POD_CIDR6_PREFIX = 'fd51:251::';
export const LOCK = '/run/retina-ts-node.lock';
/**
 * The real-node suites' own lock, held by a test process for as long as it uses the machine's one
 * node (node.sh's lock is not enough: machine.test lets a fake holder die on purpose, and another
 * checkout's waiting `up` would take the node over in that gap, or come up between its before and
 * after). Two `make test` runs on one machine (a developer's and CI's) take turns.
 */
export const SUITE_LOCK = '/run/retina-ts-node-tests.lock';

export interface RealNode extends AsyncDisposable {
  readonly kubeconfig: string;
  readonly client: RestClient;
  /** True when this helper started the node (and will stop it). */
  readonly owned: boolean;
  /** The directory of kubelet, containerd, ctr, ... (hack/node/build.sh). */
  readonly bin: string;
}

/** Runs node.sh; a failure throws with its output. */
export async function nodeSh(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 40 * 60_000): Promise<string> {
  try {
    const r = await run(NODE_SH, [...args], { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 64 << 20, timeout: timeoutMs });
    return r.stdout;
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`hack/node/node.sh ${args.join(' ')} failed: ${err.message}\n${err.stderr ?? ''}${err.stdout ?? ''}`, { cause: e });
  }
}

/** What the node changes on the machine, one line each (node.sh state). */
export async function machineState(): Promise<string[]> {
  return (await nodeSh(['state'])).split('\n').filter(Boolean);
}

export async function nodeClient(): Promise<RestClient | undefined> {
  if (!existsSync(NODE_KUBECONFIG)) return undefined;
  try {
    const c = createRestClient(await loadRestConfig({ kubeconfig: NODE_KUBECONFIG, env: {} }));
    await c.request('GET', '/readyz', { timeoutMs: 3000 }).catch((e: unknown) => {
      if (isApiError(e) || !(e instanceof SyntaxError)) throw e;
    });
    return c;
  } catch {
    return undefined;
  }
}

/** The lock's holder: `pid=<holder or 0>` and `root=<checkout>` lines, or '' when free. */
export function lockHolder(): string {
  try {
    return readFileSync(`${LOCK}/holder`, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Takes SUITE_LOCK for this process: waits up to `waitS` while a live process of another run holds
 * it, takes over a dead holder's (test/integration/dir-lock.ts). Disposing frees it.
 */
export async function holdMachine(waitS = 1200): Promise<Disposable> {
  const release = await dirLock(SUITE_LOCK, {
    waitMs: waitS * 1000, pollMs: 1000,
    busy: (owner) => `the real node's test lock ${SUITE_LOCK} is still held after ${waitS} s by pid ${owner} (another make test on this machine)`,
  });
  return { [Symbol.dispose]: release };
}

/** Waits up to `waitS` for node.sh's lock to be free (a node another checkout's `make node-up` left running). */
export async function nodeLockFree(waitS = 1200): Promise<void> {
  const deadline = Date.now() + waitS * 1000;
  for (let h = lockHolder(); h !== ''; h = lockHolder()) {
    const pid = Number(/^pid=(\d+)$/m.exec(h)?.[1] ?? 0);
    if (pid > 0 && !processAlive(pid)) return; // a dead holder's: `up` takes it over and cleans
    if (Date.now() > deadline) throw new Error(`the real node is in use: ${LOCK} is held after ${waitS} s by ${h.replace(/\n/g, ' ')}`);
    await sleep(1000);
  }
}

/**
 * Starts the real node (or reuses the one `make node-up` started from this checkout). Waits up to
 * `lockWaitS` for another checkout's node to go away, then fails naming its holder.
 */
export async function startNode(lockWaitS = 1200): Promise<RealNode> {
  const bin = (await nodeSh(['bin'])).trim().split('\n').pop() ?? '';
  const holder = lockHolder();
  let client = holder.includes(`root=${ROOT.replace(/\/$/, '')}\n`) && holder.startsWith('pid=0\n') ? await nodeClient() : undefined;
  const owned = !client;
  const suite = owned ? await holdMachine(lockWaitS) : undefined;
  if (!client) {
    try {
      await nodeSh(['up'], { RETINA_NODE_HOLDER_PID: String(process.pid), RETINA_NODE_LOCK_WAIT: String(lockWaitS) });
      client = await nodeClient();
      if (!client) throw new Error(`the node came up but its API server is not reachable with ${NODE_KUBECONFIG}`);
    } catch (e) {
      // a node that came up half way is taken down again (the machine restored) unless another checkout holds it
      if (lockHolder().includes(`pid=${process.pid}\n`)) await nodeSh(['down']).catch(() => undefined);
      suite?.[Symbol.dispose]();
      throw e;
    }
  }
  const c = client;
  return {
    kubeconfig: NODE_KUBECONFIG,
    client: c,
    owned,
    bin,
    async [Symbol.asyncDispose]() {
      c.close();
      try {
        if (owned) await nodeSh(['down']);
      } finally {
        suite?.[Symbol.dispose]();
      }
    },
  };
}

/** `ctr -n k8s.io images import` of an image archive into the node's containerd. */
export const importImage = (archive: string): Promise<string> => nodeSh(['import', archive]);
