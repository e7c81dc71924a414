/**
 * Real pods on the real node for the real-node suite: the chart's release and its agent pods, pod
 * logs through the kubelet, and the image archive `make image` builds.
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { Exec, KubeConfig } from '@kubernetes/client-node';
import https from 'node:https';
import { join } from 'node:path';
import { resources, type KubeObject, type RestClient } from '../../src/k8s/index.js';
import { sh } from '../ebpf/netns.js';
import { ROOT, deployment, eventually, listAll } from '../integration/harness.js';

export const IMAGE_ARCHIVE = join(ROOT, 'build', 'image', `retina-ts-linux-${process.arch === 'arm64' ? 'arm64' : 'amd64'}.oci.tar`);
export const IMAGE_VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
export const RELEASE = 'retina';
export const RELEASE_NS = 'kube-system';

export interface Pod extends KubeObject {
  spec: { nodeName?: string; volumes?: { name: string; projected?: unknown }[]; containers: { name: string; ports?: { containerPort: number; name?: string; protocol?: string }[] }[] };
  status?: {
    phase?: string; podIP?: string;
    containerStatuses?: { name: string; ready: boolean; restartCount: number; lastState?: unknown; state?: unknown }[];
  };
}

export async function agentPods(client: RestClient): Promise<Pod[]> {
  return listAll<Pod>(client, resources.pods, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=agent` });
}

/** GET of a text answer (pods/log) with the client's TLS and token. */
export async function getText(client: RestClient, path: string): Promise<string> {
  const opts: https.RequestOptions = { method: 'GET', headers: {} };
  await client.config.authorize(opts);
  const url = new URL(client.config.server + path);
  return new Promise((resolve, reject) => {
    const req = https.request({ ...opts, hostname: url.hostname, port: url.port, path: url.pathname + url.search, timeout: 30_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${path}: ${res.statusCode} ${body.slice(0, 500)}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** The pod's first container's log through the API server and the kubelet, JSON lines parsed (others as {text}). */
export async function podLog(client: RestClient, pod: Pod): Promise<Record<string, unknown>[]> {
  const ns = pod.metadata.namespace ?? RELEASE_NS;
  const text = await getText(client, `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/log?container=${pod.spec.containers[0]?.name ?? ''}`);
  return text.split('\n').filter(Boolean).map((l) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      return { text: l };
    }
  });
}

export const deploymentsRes = { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true } as const;
export const daemonSetsRes = { group: 'apps', version: 'v1', plural: 'daemonsets', kind: 'DaemonSet', namespaced: true } as const;

/** A Node.js script as a container of the retina-ts image (it ships node): `args` may use $(POD_IP). */
export interface ScriptContainer { name: string; script: string; args?: string[]; readyPort?: number }

export const SLEEPER = "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1 << 30); console.log('ready');";

/** A one-replica Deployment of real pods running `containers` from `image` (imported, never pulled). */
export function scriptDeployment(namespace: string, name: string, image: string, containers: readonly ScriptContainer[]): unknown {
  const d = deployment(namespace, name, 1) as { spec: { template: { spec: unknown } } };
  d.spec.template.spec = {
    terminationGracePeriodSeconds: 1,
    containers: containers.map((c) => ({
      name: c.name, image, imagePullPolicy: 'Never',
      command: ['/usr/local/bin/node', '--input-type=module', '-e', c.script], args: c.args ?? [],
      env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
      ...(c.readyPort ? { readinessProbe: { tcpSocket: { port: c.readyPort }, periodSeconds: 1 } } : {}),
    })),
  };
  return d;
}

/** The Deployment's pod once Running, Ready and with an IP; if it is not in time, the error says what its pods and their namespace's events last said. */
export async function readyPod(client: RestClient, namespace: string, app: string, timeoutMs = 120_000): Promise<Pod & { status: { podIP: string } }> {
  let seen: Pod[] = [];
  return eventually(`pod ${namespace}/${app} Ready`, timeoutMs, async () => {
    const ps = await listAll<Pod & { status?: { conditions?: { type: string; status: string }[] } }>(client, resources.pods, namespace, { labelSelector: `app=${app}` });
    seen = ps;
    const p = ps.find((x) => !x.metadata.deletionTimestamp && x.status?.podIP && x.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    return p as (Pod & { status: { podIP: string } }) | undefined;
  }, 250).catch(async (e: unknown) => {
    throw new Error([
      String(e),
      ...seen.map((p) => `pod ${p.metadata.name}: ${JSON.stringify(p.status)}`),
      ...(await namespaceEvents(client, namespace)).slice(-20),
    ].join('\n'), { cause: e });
  });
}

/** The events of `namespace`, a line each (`event <object>: <reason>: <message>`); none when they cannot be read. */
export async function namespaceEvents(client: RestClient, namespace: string): Promise<string[]> {
  const ev = await client.request<{ items: { reason?: string; message?: string; involvedObject?: { name?: string } }[] }>('GET', `/api/v1/namespaces/${namespace}/events`).catch(() => ({ items: [] }));
  return ev.items.map((x) => `event ${x.involvedObject?.name}: ${x.reason}: ${x.message}`);
}

/** The network namespace containerd made for the pod with this IP (cni-<uuid> under /run/netns). */
export function netnsOf(ip: string): string {
  for (const n of sh('ip', ['netns', 'list']).split('\n')) {
    const name = n.split(' ')[0] ?? '';
    if (!name.startsWith('cni-')) continue;
    const addrs = sh('ip', ['-n', name, '-4', '-o', 'addr', 'show']);
    if (addrs.includes(` ${ip}/`)) return name;
  }
  throw new Error(`no cni- network namespace holds ${ip}`);
}

/** The cgroup directory (v1 `hierarchy`: memory, cpuacct, ...) of the pod's first container, as kubelet's cgroupfs driver made it. */
export function containerCgroup(pod: Pod, hierarchy: string): string {
  const id = (pod.status?.containerStatuses?.[0] as { containerID?: string } | undefined)?.containerID?.replace(/^containerd:\/\//, '') ?? '';
  if (!id) throw new Error(`${pod.metadata.name} has no container id yet`);
  const dir = sh('find', [`/sys/fs/cgroup/${hierarchy}/kubepods`, '-maxdepth', '3', '-type', 'd', '-name', id]).trim().split('\n')[0] ?? '';
  if (!dir.includes(`pod${pod.metadata.uid ?? ''}`)) throw new Error(`no ${hierarchy} cgroup for container ${id} of pod ${pod.metadata.uid ?? ''} (found '${dir}')`);
  return dir;
}

/** `command` in a container of a pod through pods/exec (API server -> kubelet -> containerd's stream server). */
export async function podExec(kubeconfig: string, namespace: string, pod: string, container: string, command: string[]): Promise<{ status: { status?: string; message?: string }; stdout: string; stderr: string }> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  let stdout = '';
  let stderr = '';
  const out = new Writable({ write(c: Buffer, _e, cb) { stdout += c.toString(); cb(); } });
  const err = new Writable({ write(c: Buffer, _e, cb) { stderr += c.toString(); cb(); } });
  const status = await new Promise<{ status?: string; message?: string }>((resolve, reject) => {
    new Exec(kc).exec(namespace, pod, container, command, out, err, null, false, (st) => resolve(st as { status?: string })).catch(reject);
  });
  return { status, stdout, stderr };
}
