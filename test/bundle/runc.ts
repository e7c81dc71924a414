/**
 * The Linux image (make image) unpacked with umoci and run with runc in a network namespace the
 * test made: the container gets exactly the given capabilities and the mounts the chart gives the
 * agent (/sys/fs/bpf, /sys/kernel/btf, tracefs; /proc is the container's own).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentProcess, ROOT, agentEnv } from '../e2e/agent-process.js';
import type { Netns } from '../ebpf/netns.js';

export const IMAGE_TAG = `linux-${process.arch === 'arm64' ? 'arm64' : 'amd64'}`;
export const IMAGE_LAYOUT = join(ROOT, 'build', 'image', `oci-${IMAGE_TAG}`);

/** Fails loudly without runc, umoci or the image. */
export function requireImageTools(): void {
  for (const tool of ['runc', 'umoci', 'skopeo']) {
    try {
      execFileSync(tool, ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error(`${tool} is missing: run make setup (Debian package ${tool})`);
    }
  }
  if (!existsSync(join(IMAGE_LAYOUT, 'index.json'))) throw new Error(`${IMAGE_LAYOUT} is missing: run make image`);
}

/** `umoci unpack`s the image into `dir` (a runtime bundle: config.json and rootfs/). */
export function unpackImage(dir: string): void {
  execFileSync('umoci', ['unpack', '--image', `${IMAGE_LAYOUT}:${IMAGE_TAG}`, dir], { stdio: 'ignore' });
}

const hostMount = (path: string, ro: boolean): object => ({ destination: path, type: 'bind', source: path, options: ['rbind', 'nosuid', 'nodev', 'noexec', ro ? 'ro' : 'rw'] });

/** Rewrites `dir`/config.json: network namespace `ns`, capabilities `caps` (names without CAP_), the chart's mounts, no terminal. */
export function configure(dir: string, ns: Netns, caps: readonly string[]): void {
  const file = join(dir, 'config.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as {
    process: { terminal: boolean; capabilities: Record<string, string[]> };
    mounts: object[];
    linux: { namespaces: { type: string; path?: string }[] };
  };
  const set = caps.map((c) => `CAP_${c}`);
  // As the kubelet asks of the runtime: bounding, effective and permitted; nothing inherited.
  cfg.process.capabilities = { bounding: set, effective: set, permitted: set, inheritable: [], ambient: [] };
  cfg.process.terminal = false;
  cfg.linux.namespaces = cfg.linux.namespaces.map((n) => (n.type === 'network' ? { type: 'network', path: `/var/run/netns/${ns.name}` } : { type: n.type }));
  const base = (cfg.mounts as { destination: string }[]).filter((m) => !m.destination.startsWith('/sys/fs/bpf') && !m.destination.startsWith('/sys/kernel/'));
  cfg.mounts = [...base, hostMount('/sys/fs/bpf', false), hostMount('/sys/kernel/btf', true), { destination: '/sys/kernel/tracing', type: 'tracefs', source: 'tracefs', options: ['nosuid', 'nodev', 'noexec'] }];
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

/** The container `id` run from bundle `dir` (runc run in the foreground; its stderr is the agent's log). */
export class RuncAgent implements AsyncDisposable {
  readonly proc: AgentProcess;
  constructor(readonly id: string, dir: string) {
    this.proc = new AgentProcess({ command: ['runc', 'run', '--bundle', dir, id], env: agentEnv() });
  }
  /** The agent's pid on the host (runc state). */
  pid(): number {
    return (JSON.parse(execFileSync('runc', ['state', this.id], { encoding: 'utf8' })) as { pid: number }).pid;
  }
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.proc[Symbol.asyncDispose]();
    } finally {
      try {
        execFileSync('runc', ['delete', '-f', this.id], { stdio: 'ignore' });
      } catch {
        /* already gone */
      }
    }
  }
}
