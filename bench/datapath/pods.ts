/**
 * A node with N pods, as a CNI lays them out: each pod is a network namespace whose eth0 is one end
 * of a veth pair; the other end (ppbh<i>) sits in the host namespace with a /32 route to the pod.
 * Pods talk to a "service" address on a port-less bridge of the host namespace (no dummy module on
 * every kernel), so no forwarding is
 * needed on the host and nothing leaves the machine. The UDP load comes from pktgen.c (one process,
 * one socket per pod namespace, sendmmsg), built here with the host's clang. Needs root.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { collectionPath, objectPath, resources, type RestClient } from '../../src/k8s/index.js';
import { cHelper } from '../../test/ebpf/c-helper.js';
import { sh } from '../../test/ebpf/netns.js';

/** The service address pods send to, on the host's port-less bridge. */
export const SERVICE_IP = '10.237.0.1';

export interface Pod {
  readonly index: number;
  readonly netns: string;
  readonly hostIf: string;
  readonly ip: string;
}

export function pktgen(): string {
  return cHelper('bench/datapath/pktgen.c');
}

export interface PodNodeOptions {
  /** Prefix of the namespaces and links (default `ppb<pid>`): keep it short, link names have 15 characters. */
  readonly tag?: string;
  /** First two octets of the pods' addresses (default `10.238`). */
  readonly net?: string;
  /** The network namespace the node's side lives in (the host's when absent). */
  readonly node?: string;
  /** Pod to pod through the node: proxy ARP on the node's veth ends, IP forwarding in the node's namespace. */
  readonly podToPod?: boolean;
}

export class PodNode implements Disposable {
  readonly pods: Pod[] = [];
  readonly #tag: string;
  readonly #net: string;
  readonly #node: readonly string[];
  readonly #opts: PodNodeOptions;
  constructor(n: number, opts: PodNodeOptions = {}) {
    this.#opts = opts;
    this.#tag = opts.tag ?? `ppb${process.pid % 1000}`;
    this.#net = opts.net ?? '10.238';
    this.#node = opts.node ? ['-n', opts.node] : [];
    sh('ip', [...this.#node, 'link', 'add', `${this.#tag}svc`, 'type', 'bridge']);
    sh('ip', [...this.#node, 'addr', 'add', `${SERVICE_IP}/32`, 'dev', `${this.#tag}svc`]);
    sh('ip', [...this.#node, 'link', 'set', `${this.#tag}svc`, 'up']);
    if (opts.podToPod) this.#sysctl(opts.node, 'net.ipv4.ip_forward=1');
    try {
      for (let i = 0; i < n; i++) this.pods.push(this.#addPod(i));
    } catch (e) {
      this[Symbol.dispose]();
      throw e;
    }
  }
  #addPod(i: number): Pod {
    const netns = `${this.#tag}-p${i}`;
    const hostIf = `${this.#tag}h${i}`;
    const ip = `${this.#net}.${Math.floor(i / 200)}.${(i % 200) + 1}`;
    sh('ip', ['netns', 'add', netns]);
    sh('ip', [...this.#node, '-batch', '-'], [
      `link add ${hostIf} type veth peer name eth0 netns ${netns}`,
      `link set ${hostIf} up`,
      `route add ${ip}/32 dev ${hostIf}`,
    ].join('\n'));
    sh('ip', ['-n', netns, '-batch', '-'], ['link set lo up', `addr add ${ip}/32 dev eth0`, 'link set eth0 up', 'route add default dev eth0'].join('\n'));
    for (const [ns, dev] of [[this.#opts.node, hostIf], [netns, 'eth0']] as const) this.#sysctl(ns, `net.ipv6.conf.${dev}.disable_ipv6=1`);
    if (this.#opts.podToPod) this.#sysctl(this.#opts.node, `net.ipv4.conf.${hostIf}.proxy_arp=1`);
    return { index: i, netns, hostIf, ip };
  }
  #sysctl(ns: string | undefined, setting: string): void {
    if (ns) sh('ip', ['netns', 'exec', ns, 'sysctl', '-qw', setting]);
    else sh('sysctl', ['-qw', setting]);
  }
  /** Starts pktgen sending `pps` UDP packets/s in total from every pod to SERVICE_IP:port. */
  send(seconds: number, pps: number, size: number, port: number): ChildProcess {
    return spawn(pktgen(), ['send', String(seconds), String(pps), String(size), SERVICE_IP, String(port), ...this.pods.map((p) => p.netns)], { stdio: ['ignore', 'pipe', 'pipe'] });
  }
  /** A UDP sink on the host for `seconds`; resolves when it is ready. */
  async sink(seconds: number, port: number): Promise<ChildProcess> {
    const args = ['sink', String(seconds), String(port)];
    const child = this.#opts.node
      ? spawn('ip', ['netns', 'exec', this.#opts.node, pktgen(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(pktgen(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout?.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`pktgen sink exited ${code}`)));
    });
    return child;
  }
  [Symbol.dispose](): void {
    for (const p of this.pods) {
      try { sh('ip', ['netns', 'del', p.netns]); } catch { /* gone */ }
      try { sh('ip', [...this.#node, 'link', 'del', p.hostIf]); } catch { /* went with the namespace */ }
    }
    try { sh('ip', [...this.#node, 'link', 'del', `${this.#tag}svc`]); } catch { /* gone */ }
  }
}

/** Stdout of a finished child, once it exits. */
export function output(child: ChildProcess): Promise<string> {
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (out += s));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${out}`))));
  });
}

/** A Node nobody manages (no kubelet, no kwok annotation): its pods keep the status we write. */
export async function createUnmanagedNode(c: RestClient, node: string): Promise<void> {
  await c.request('POST', collectionPath(resources.nodes), {
    body: { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { 'kubernetes.io/hostname': node, 'topology.kubernetes.io/zone': 'bench-zone' } } },
  }).catch((e: unknown) => { if (!String(e).includes('AlreadyExists') && !String(e).includes('409')) throw e; });
}

/** A pod bound to `node` with the status a kubelet would write: Running, Ready, `ip` as its address. */
export async function createRunningPod(c: RestClient, namespace: string, name: string, node: string, ip: string): Promise<void> {
  await c.request('POST', collectionPath(resources.pods, namespace), {
    body: {
      apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: { app: 'web' } },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'bench' }], tolerations: [{ operator: 'Exists' }] },
    },
  });
  await c.request('PATCH', objectPath(resources.pods, namespace, name, 'status'), {
    contentType: 'application/merge-patch+json',
    body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], hostIP: '192.0.2.2', conditions: [{ type: 'Ready', status: 'True' }] } },
  });
}

/** Retina's annotation metric set, every metric with these source and destination context labels, for `namespace`. */
export function metricsConfiguration(name: string, namespace: string, src = ['ip', 'namespace', 'podname', 'workload'], dst = src): { apiVersion: string; kind: string; metadata: { name: string }; spec: unknown } {
  const metrics = ['forward_count', 'forward_bytes', 'drop_count', 'drop_bytes', 'tcp_flag_gauges', 'tcp_retransmission_count', 'dns_request_count', 'dns_response_count'];
  return {
    apiVersion: 'retina.sh/v1alpha1', kind: 'MetricsConfiguration', metadata: { name },
    spec: { contextOptions: metrics.map((metricName) => ({ metricName, sourceLabels: src, destinationLabels: dst })), namespaces: { include: [namespace] } },
  };
}
