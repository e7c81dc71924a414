/**
 * The real agent (`bin/retina-agent --kubeconfig`, default plugins) as a child process: when its IP
 * cache synced (its own log line), its RSS and peak RSS, and its CPU (utime + stime) over a window.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { eventually, ROOT } from '../../../test/integration/harness.js';

export interface AgentProcess extends AsyncDisposable {
  readonly pid: number;
  /** ms from spawn to the agent's "IP cache synced" line. */
  synced(timeoutMs: number): Promise<{ ms: number; line: Record<string, unknown> }>;
  /** CPU seconds so far. */
  cpuS(): number;
  memory(): { rssMB: number; peakRssMB: number; anonMB: number };
  log(): string;
}

export function startAgent(kubeconfig: string, env: Record<string, string>): AgentProcess {
  const t0 = performance.now();
  const agent = spawn(`${ROOT}bin/retina-agent`, ['--kubeconfig', kubeconfig], {
    env: { PATH: process.env['PATH'], RETINA_APISERVER_HOST: '127.0.0.1', RETINA_APISERVER_PORT: '0', RETINA_LOGLEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise((r) => agent.once('exit', r));
  let log = '';
  let syncedAt: number | undefined;
  agent.stderr.setEncoding('utf8');
  agent.stderr.on('data', (d: string) => {
    if (log.length < 4 << 20) log += d;
    if (syncedAt === undefined && log.includes('"msg":"IP cache synced"')) syncedAt = performance.now();
  });
  const status = (): string => readFileSync(`/proc/${agent.pid}/status`, 'utf8');
  const kb = (s: string, k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? NaN);
  return {
    pid: agent.pid as number,
    async synced(timeoutMs) {
      await eventually('the agent\'s IP cache synced', timeoutMs, () => {
        if (agent.exitCode !== null) throw new Error(`the agent exited with ${agent.exitCode}: ${log.slice(-2000)}`);
        return syncedAt !== undefined;
      }, 100);
      const line = JSON.parse(log.split('\n').find((l) => l.includes('"IP cache synced"')) as string) as Record<string, unknown>;
      return { ms: (syncedAt as number) - t0, line };
    },
    cpuS() {
      const stat = readFileSync(`/proc/${agent.pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(f[11]) + Number(f[12])) / 100;
    },
    memory() {
      const s = status();
      return { rssMB: kb(s, 'VmRSS') / 1024, peakRssMB: kb(s, 'VmHWM') / 1024, anonMB: kb(s, 'RssAnon') / 1024 };
    },
    log: () => log,
    async [Symbol.asyncDispose]() {
      if (agent.exitCode === null) agent.kill('SIGTERM');
      await exited;
    },
  };
}
