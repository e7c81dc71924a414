/**
 * Shared by the datapath benchmarks: a client and a server namespace joined by a veth pair (the
 * client's default route leaves through it), an iperf3 server, and the agent with all four eBPF
 * plugins run in the client namespace. Needs root, kernel BTF, iperf3.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Netns, NsAgent, progRunStats, requireKernel, stopAll, vethPair } from '../../test/ebpf/netns.js';

export const ALL_EBPF = 'enabledPlugin: [packetforward, dropreason, dns, tcpretrans]\n';

export class Bed implements AsyncDisposable {
  readonly client: Netns;
  readonly server: Netns;
  readonly #helpers: ChildProcess[] = [];
  constructor() {
    requireKernel();
    this.client = new Netns('bench-c');
    this.server = new Netns('bench-s');
    vethPair(this.client, 'rtbpf-bc', '10.235.1.1', this.server, 'rtbpf-bs', '10.235.1.2');
    this.client.run('ip', ['route', 'add', 'default', 'via', '10.235.1.2']);
    for (const port of ['5201', '53']) {
      this.#helpers.push(spawn('ip', ['netns', 'exec', this.server.name, 'iperf3', '-s', '-B', '10.235.1.2', '-p', port], { stdio: 'ignore' }));
    }
  }
  /** Runs iperf3 from the client (server port 5201; `-p 53` reaches the second server); returns the JSON result. */
  iperf(args: readonly string[]): Record<string, unknown> {
    for (let attempt = 0; ; attempt++) {
      try {
        return JSON.parse(this.client.run('iperf3', ['-c', '10.235.1.2', '-J', ...args])) as Record<string, unknown>;
      } catch (e) {
        if (attempt >= 5) throw e;
        // the server may not listen yet, or is busy finishing the previous test
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
      }
    }
  }
  async agent(config = ALL_EBPF): Promise<NsAgent> {
    const a = new NsAgent(this.client, config);
    await a.started(['packetforward', 'dropreason', 'dns', 'tcpretrans'].filter((p) => config.includes(p)));
    return a;
  }
  async [Symbol.asyncDispose](): Promise<void> {
    await stopAll(this.#helpers);
    this.client.destroy();
    this.server.destroy();
  }
}

/** utime + stime of `pid` in seconds. */
export function cpuSeconds(pid: number, ticks = 100): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / ticks;
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/**
 * What a process's BPF programs cost in the kernel, summed over calls to `collect` (BPF run-time
 * statistics: they count only while someone holds `enableBpfRunStats()`, test/ebpf/run-stats.ts). Programs are keyed by
 * name, so an agent restarted between runs adds to the same entries.
 */
export class HookTimes {
  readonly #times = new Map<string, { ns: number; runs: number }>();
  /** Adds the run counts and run times of `pid`'s programs (read at its end of a run: they start at 0 with each agent). */
  collect(pid: number): void {
    for (const [name, r] of progRunStats(pid)) {
      const t = this.#times.get(name) ?? { ns: 0, runs: 0 };
      t.ns += r.ns;
      t.runs += r.runs;
      this.#times.set(name, t);
    }
  }
  /** Runs and ns per run, by program. */
  perProgram(): Record<string, { runs: number; nsPerRun: number }> {
    return Object.fromEntries([...this.#times].map(([name, t]) => [name, { runs: t.runs, nsPerRun: Number((t.ns / Math.max(1, t.runs)).toFixed(1)) }]));
  }
  /** Total run time in seconds. */
  seconds(): number {
    return [...this.#times.values()].reduce((n, t) => n + t.ns, 0) / 1e9;
  }
}
