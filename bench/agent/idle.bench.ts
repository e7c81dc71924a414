/**
 * Idle footprint of `bin/retina-agent` with the default config (only the port is 0 and the host
 * 127.0.0.1), side by side with a bare `node -e "setInterval(()=>{},1000)"`, both started together
 * and sampled together: RSS (VmRSS
 * from /proc/<pid>/status) every second and CPU (utime + stime from /proc/<pid>/stat) over the
 * window, which opens 2 s after the agents log "plugins started". No scrapes during the window. Goal: agent RSS at most 75 MB idle (bare Node 22: ~42 MB).
 * Env: BENCH_IDLE_SECONDS (60).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { AgentProcess, agentEnv, nodeBinary, type LogLine } from '../../test/e2e/agent-process.js';
import { envInt, summarize } from '../server/summary.js';

const SECONDS = envInt('BENCH_IDLE_SECONDS', 60);
const MB = 1024 * 1024;
const SETTLE_MS = 2_000;

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}
const TICKS = clockTicks();

/** VmRSS and VmHWM of `pid` in bytes. */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** utime + stime of `pid` in seconds (fields 14 and 15 of /proc/<pid>/stat, after the `(comm)`). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // f[0] is field 3 (state), so field 14 is f[11] and field 15 is f[12].
  return (Number(f[11]) + Number(f[12])) / TICKS;
}

interface Subject {
  readonly name: string;
  readonly proc: AgentProcess;
  readonly rss: number[];
  cpu0: number;
}

const agentEnvVars = agentEnv({ RETINA_APISERVER_PORT: '0', RETINA_APISERVER_HOST: '127.0.0.1' });
const subjects: Subject[] = [
  { name: 'agent', proc: new AgentProcess({ env: agentEnvVars }), rss: [], cpu0: 0 },
  { name: 'bareNode', proc: new AgentProcess({ command: [nodeBinary(), '-e', 'setInterval(()=>{},1000)'] }), rss: [], cpu0: 0 },
];

try {
  let started: LogLine | undefined;
  let plugins: LogLine | undefined;
  for (const s of subjects.filter((x) => x.name !== 'bareNode')) {
    await s.proc.listening();
    plugins = await s.proc.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
    started = await s.proc.waitForLog((l) => l.msg === 'starting retina-agent', '"starting retina-agent"');
  }
  // Let every process (the bare one has no ready line) finish booting before the window opens.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const t0 = performance.now();
  for (const s of subjects) s.cpu0 = cpuSeconds(s.proc.pid);
  for (let i = 0; i <= SECONDS; i++) {
    for (const s of subjects) {
      if (s.proc.exit) throw new Error(`${s.name} exited during the window: ${JSON.stringify(s.proc.exit)}\n${s.proc.stderr}`);
      s.rss.push(memory(s.proc.pid).rss);
    }
    if (i < SECONDS) await new Promise((r) => setTimeout(r, t0 + (i + 1) * 1000 - performance.now()));
  }
  const wall = (performance.now() - t0) / 1000;

  const figures: Record<string, unknown> = {};
  for (const s of subjects) {
    const mb = summarize(s.rss.map((b) => b / MB), 1);
    figures[s.name] = {
      rssMedianMB: mb.p50,
      rssMaxMB: mb.max,
      rssFirstMB: Number(((s.rss[0] ?? NaN) / MB).toFixed(1)),
      rssLastMB: Number(((s.rss[s.rss.length - 1] ?? NaN) / MB).toFixed(1)),
      peakRssMB: Number((memory(s.proc.pid).hwm / MB).toFixed(1)),
      cpuPercentOfOneCore: Number(((100 * (cpuSeconds(s.proc.pid) - s.cpu0)) / wall).toFixed(3)),
    };
  }
  const agent = figures['agent'] as { rssMedianMB: number };
  const bare = figures['bareNode'] as { rssMedianMB: number };
  console.log(JSON.stringify({
    name: 'agent/idle',
    ...figures,
    agentOverBareNodeMB: Number((agent.rssMedianMB - bare.rssMedianMB).toFixed(1)),
    goalRssMB: 75,
    conditions: {
      seconds: SECONDS, settleMs: SETTLE_MS, samples: SECONDS + 1, wallSeconds: Number(wall.toFixed(2)), clockTicks: TICKS,
      enabledPlugin: started?.['enabledPlugin'], running: plugins?.['running'], failed: plugins?.['failed'],
      config: 'defaults + RETINA_APISERVER_PORT=0, RETINA_APISERVER_HOST=127.0.0.1', scrapes: 0,
      node: String(execFileSync(nodeBinary(), ['--version'], { encoding: 'utf8' })).trim(), kernel: started?.['kernel'],
      loadavg1m: Number((loadavg()[0] ?? 0).toFixed(2)),
    },
  }));
} finally {
  await Promise.all(subjects.map((s) => s.proc[Symbol.asyncDispose]()));
}
