/**
 * "Pods" for the pod-flows test: each is a network namespace whose eth0 is one end of a veth pair;
 * the other end sits in the host namespace, enslaved to one Linux bridge, as on a kubenet node. The
 * host namespace does not route (no forwarding sysctl is touched): the pods share one IPv4 /24 and
 * one IPv6 /64 on the bridge. Names start with `pf` and carry the pid, so parallel runs and other
 * suites never collide; `destroy()` removes namespaces, veths and the bridge.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { nodeBinary } from '../e2e/agent-process.js';
import { nodeInNetns, sh } from '../ebpf/netns.js';

const quiet = (fn: () => unknown): void => {
  try {
    fn();
  } catch {
    /* already gone */
  }
};

export class PodNet {
  readonly id = String(process.pid % 100000);
  readonly bridge: string;
  readonly pods: PodNs[] = [];

  /** `prefix`: of every name made (netns, links), so suites running side by side never collide. */
  constructor(readonly prefix = 'pf') {
    this.bridge = `${prefix}br${this.id}`;
    this.destroy(); // leftovers of an earlier run with the same pid
    sh('ip', ['link', 'add', 'name', this.bridge, 'type', 'bridge']);
    // No IPv6 autoconfiguration or router chatter from the host side.
    sh('sysctl', ['-qw', `net.ipv6.conf.${this.bridge}.disable_ipv6=1`]);
    sh('ip', ['link', 'set', this.bridge, 'up']);
  }

  /** A pod namespace with `ip4`/24 and `ip6`/64 on its eth0, attached to the bridge. */
  add(tag: string, ip4: string, ip6: string): PodNs {
    const p = new PodNs(`${this.prefix}-${tag}-${this.id}`, `${this.prefix}${tag}${this.id}`.slice(0, 15), ip4, ip6);
    sh('ip', ['netns', 'add', p.name]);
    p.run('ip', ['link', 'set', 'lo', 'up']);
    sh('ip', ['link', 'add', p.hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', p.name]);
    sh('sysctl', ['-qw', `net.ipv6.conf.${p.hostIf}.disable_ipv6=1`]);
    sh('ip', ['link', 'set', p.hostIf, 'master', this.bridge]);
    sh('ip', ['link', 'set', p.hostIf, 'up']);
    p.run('ip', ['addr', 'add', `${ip4}/24`, 'dev', 'eth0']);
    p.run('ip', ['-6', 'addr', 'add', `${ip6}/64`, 'dev', 'eth0', 'nodad']);
    p.run('ip', ['link', 'set', 'eth0', 'up']);
    this.pods.push(p);
    return p;
  }

  destroy(): void {
    for (const p of this.pods) p.destroy();
    this.pods.length = 0;
    for (const l of sh('ip', ['-o', 'link', 'show']).split('\n')) {
      const m = new RegExp(`^\\d+: (${this.prefix}[a-z0-9]*?)(@\\S+)?:`).exec(l);
      if (m && (m[1] as string).endsWith(this.id)) quiet(() => sh('ip', ['link', 'del', m[1] as string]));
    }
    for (const n of sh('ip', ['netns', 'list']).split('\n')) {
      const name = n.split(' ')[0] ?? '';
      if (name.startsWith(`${this.prefix}-`) && name.endsWith(`-${this.id}`)) quiet(() => sh('ip', ['netns', 'del', name]));
    }
  }
}

export class PodNs {
  readonly #children: ChildProcess[] = [];
  constructor(
    readonly name: string,
    readonly hostIf: string,
    readonly ip4: string,
    readonly ip6: string,
  ) {}

  run(cmd: string, args: readonly string[], input?: string): string {
    return sh('ip', ['netns', 'exec', this.name, cmd, ...args], input);
  }

  /** Runs a Node.js script in this namespace; resolves with its stdout. */
  node(script: string, args: readonly string[] = [], timeoutMs = 30_000): Promise<string> {
    return nodeInNetns(this.name, script, args, timeoutMs);
  }

  /**
   * nftables counters of what this pod sends from its pod address to each address (output hook,
   * every protocol): the ground truth for adv_forward_count by source pod. `read(ip)` gives the
   * packets counted so far. The source must be the pod's address: the kernel sends some neighbour
   * probes from the link-local address (fe80::), which no flow can attribute to the pod.
   */
  countSent(ips: readonly string[], table = 'pfcount'): { read(ip: string): number } {
    const name = (ip: string): string => `to_${ips.indexOf(ip)}`;
    const rules = ips.map((ip) => (ip.includes(':') ? `  ip6 saddr ${this.ip6} ip6 daddr ${ip}` : `  ip saddr ${this.ip4} ip daddr ${ip}`) + ` counter name ${name(ip)}`);
    this.run('nft', ['-f', '-'], `table inet ${table} {\n${ips.map((ip) => ` counter ${name(ip)} {}`).join('\n')}\n chain out {\n  type filter hook output priority 0;\n${rules.join('\n')}\n }\n}\n`);
    return {
      read: (ip) => {
        const j = JSON.parse(this.run('nft', ['-j', 'list', 'counter', 'inet', table, name(ip)])) as { nftables: { counter?: { packets: number } }[] };
        const c = j.nftables.find((x) => x.counter)?.counter;
        if (!c) throw new Error(`no nftables counter for ${ip} in ${this.name}`);
        return c.packets;
      },
    };
  }

  /** Starts a long-running Node.js script here; resolves once it printed its first line. */
  async serve(script: string, args: readonly string[] = []): Promise<ChildProcess> {
    const child = spawn('ip', ['netns', 'exec', this.name, nodeBinary(), '--input-type=module', '-e', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#children.push(child);
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('close', (code) => reject(new Error(`server in ${this.name} exited ${code}: ${err}`)));
    });
    return child;
  }

  destroy(): void {
    for (const c of this.#children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    this.#children.length = 0;
    quiet(() => sh('ip', ['netns', 'del', this.name]));
  }
}
