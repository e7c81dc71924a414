/**
 * Running an agent for a side-by-side benchmark, written once (bench/agent/retina.bench.ts,
 * bench/datapath/retina-side.bench.ts, bench/datapath/per-packet.bench.ts): each agent in a cgroup of
 * its own (CPU of everything it starts, e.g. the clang Retina runs at start-up) inside a network
 * namespace, and Microsoft Retina's own agent as built by hack/retina/build.sh.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sleep } from '../../test/ebpf/netns.js';
import { AgentProcess, ROOT } from '../../test/e2e/agent-process.js';
import { cpuSeconds } from '../../test/e2e/proc-stats.js';

export interface Subject {
  readonly name: string;
  readonly command: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** The config file's text for an agent serving /metrics on `port`. */
  config(port: number): string;
  readonly args: (configFile: string) => string[];
}

/**
 * The directory of Retina's build (`controller` and its plugin sources), or why there is none: only
 * "not built" (hack/retina/build.sh with RETINA_BUILD_IF_MISSING=no fails) is a reason to leave Retina
 * out; BENCH_RETINA_BIN=<dir> names a build elsewhere.
 */
export function retinaBuild(): { dir: string } | { missing: string } {
  const given = process.env['BENCH_RETINA_BIN'];
  if (given) {
    if (!existsSync(join(given, 'controller'))) throw new Error(`BENCH_RETINA_BIN=${given} holds no controller`);
    return { dir: given };
  }
  try {
    const dir = execFileSync(join(ROOT, 'hack', 'retina', 'build.sh'), { encoding: 'utf8', env: { ...process.env, RETINA_BUILD_IF_MISSING: 'no' }, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    if (!existsSync(join(dir, 'controller'))) throw new Error(`${dir}/controller is missing though the build says it is complete`);
    return { dir };
  } catch (e) {
    const stderr = (e as { stderr?: string }).stderr;
    if (typeof stderr === 'string' && stderr.includes('is not built')) return { missing: `${stderr.trim()} with RETINA_GIT_DIR=<clone of microsoft/retina>` };
    throw e;
  }
}

/** What Retina's init container writes for the programs it compiles at start-up: vmlinux.h in `dir`. */
export function retinaVmlinuxInclude(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'vmlinux.h');
  if (!existsSync(file)) writeFileSync(file, execFileSync('bpftool', ['btf', 'dump', 'file', '/sys/kernel/btf/vmlinux', 'format', 'c'], { maxBuffer: 256 << 20 }));
  return dir;
}

/** A cgroup holding one agent and what it starts: CPU seconds used so far. */
export class CpuGroup {
  static #seq = 0;
  readonly dir: string;
  readonly #read: () => number;
  constructor(tag: string) {
    const name = `rtbench-${process.pid}-${tag}-${CpuGroup.#seq++}`;
    if (existsSync('/sys/fs/cgroup/cpuacct/cpuacct.usage')) {
      this.dir = `/sys/fs/cgroup/cpuacct/${name}`;
      this.#read = () => Number(readFileSync(join(this.dir, 'cpuacct.usage'), 'utf8')) / 1e9;
    } else if (existsSync('/sys/fs/cgroup/cgroup.controllers')) {
      this.dir = `/sys/fs/cgroup/${name}`;
      this.#read = () => Number(/^usage_usec (\d+)/m.exec(readFileSync(join(this.dir, 'cpu.stat'), 'utf8'))?.[1]) / 1e6;
    } else {
      throw new Error('no cgroup v1 cpuacct or cgroup v2 hierarchy at /sys/fs/cgroup');
    }
    mkdirSync(this.dir);
  }
  cpu(): number {
    return this.#read();
  }
  remove(): void {
    for (let i = 0; i < 50; i++) {
      try {
        rmdirSync(this.dir);
        return;
      } catch {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
      }
    }
  }
}

/** One agent running in network namespace `ns`: its cgroup, its process, when it was exec'd. */
export class Run implements AsyncDisposable {
  readonly proc: AgentProcess;
  readonly group: CpuGroup;
  readonly t0: number;
  constructor(readonly subject: Subject, ns: string, readonly port: number, work: string) {
    const file = join(work, `${subject.name}-${port}.yaml`);
    writeFileSync(file, subject.config(port));
    this.group = new CpuGroup(subject.name);
    // The shell joins the cgroup, then becomes `ip netns exec`, which becomes the agent (one pid).
    const command = ['sh', '-c', `echo $$ > ${this.group.dir}/cgroup.procs && exec "$@"`, 'sh', 'ip', 'netns', 'exec', ns, ...subject.command];
    this.t0 = performance.timeOrigin + performance.now();
    this.proc = new AgentProcess({ command, args: subject.args(file), env: subject.env });
  }
  /** Seconds since exec. */
  age(): number {
    return (performance.timeOrigin + performance.now() - this.t0) / 1000;
  }
  cpu(): number {
    return this.group.cpu();
  }
  ownCpu(): number {
    return cpuSeconds(this.proc.pid);
  }
  alive(): void {
    if (this.proc.exit) throw new Error(`${this.subject.name} exited ${JSON.stringify(this.proc.exit)}:\n${this.proc.stderr.slice(-3000)}\n${this.proc.stdout.slice(-3000)}`);
  }
  /** Waits until `s` seconds after exec. */
  async until(s: number): Promise<void> {
    const left = s - this.age();
    if (left > 0) await sleep(left * 1000);
    this.alive();
  }
  async [Symbol.asyncDispose](): Promise<void> {
    await this.proc[Symbol.asyncDispose]();
    this.group.remove();
  }
}
