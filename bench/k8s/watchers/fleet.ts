/**
 * Many light agents at once: `processes` forked watcher.ts processes of `perProcess` watch layers
 * each, started together, asked for their figures, killed together (SIGKILL, as a node loses its
 * agent) and started again: the API server meets all of them at the same moment, as in a DaemonSet
 * rollout of every node at once.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { WatcherMessage, WatcherStats } from './protocol.js';

const ENTRY = fileURLToPath(new URL('./watcher.js', import.meta.url));

export interface ProcessStats {
  readonly pid: number;
  readonly startedAt: number;
  readonly rssMB: number;
  readonly heapMB: number;
  readonly cpuS: number;
  readonly watchers: readonly WatcherStats[];
}

export interface Fleet extends AsyncDisposable {
  /** Wall-clock ms when the processes were forked. */
  readonly startedAt: number;
  readonly size: number;
  /** Resolves when every watch layer has reported its initial state (times are Date.now()). */
  allSynced(timeoutMs: number): Promise<number[]>;
  stats(): Promise<ProcessStats[]>;
  kill(): Promise<void>;
}

export function startFleet(o: { kubeconfig: string; processes: number; perProcess: number; initialState: 'list' | 'stream'; slices?: boolean }): Fleet {
  const startedAt = Date.now();
  const synced: number[] = [];
  const children: ChildProcess[] = [];
  const exited: Promise<unknown>[] = [];
  for (let i = 0; i < o.processes; i++) {
    const c = fork(ENTRY, [], {
      env: { PATH: process.env['PATH'], KUBECONFIG: o.kubeconfig, BENCH_WATCHERS_PER_PROCESS: String(o.perProcess), BENCH_WATCH_INITIAL: o.initialState, BENCH_WATCH_SLICES: o.slices ? '1' : '0' },
      execArgv: ['--max-semi-space-size=2'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    c.on('message', (m: WatcherMessage) => {
      if (m.type === 'synced') synced.push(m.at);
    });
    children.push(c);
    exited.push(new Promise((r) => c.once('exit', r)));
  }
  const size = o.processes * o.perProcess;
  async function kill(): Promise<void> {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(exited);
  }
  return {
    startedAt,
    size,
    async allSynced(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (synced.length < size) {
        if (Date.now() > deadline) throw new Error(`${synced.length} of ${size} watchers synced after ${timeoutMs} ms`);
        if (children.some((c) => c.exitCode !== null)) throw new Error('a watcher process exited before it synced');
        await new Promise((r) => setTimeout(r, 200));
      }
      return [...synced];
    },
    async stats() {
      return Promise.all(children.map((c) => new Promise<ProcessStats>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`watcher ${c.pid} did not answer stats in 60 s`)), 60_000);
        const on = (m: WatcherMessage): void => {
          if (m.type !== 'stats') return;
          clearTimeout(t);
          c.off('message', on);
          resolve({ pid: c.pid as number, startedAt: m.startedAt, rssMB: m.rssMB, heapMB: m.heapMB, cpuS: m.cpuS, watchers: m.watchers });
        };
        c.on('message', on);
        c.send({ cmd: 'stats' });
      })));
    },
    kill,
    [Symbol.asyncDispose]: kill,
  };
}
