/**
 * Side by side with Microsoft Retina's own agent (`controller/` of microsoft/retina, built from its
 * public source by hack/retina/build.sh): the same plugins (linuxutil, packetforward, dns), the same
 * 10 s interval, one network namespace (bench/datapath's client namespace: a veth as default route)
 * holding BENCH_RETINA_SOCKETS idle loopback TCP connections (a node's sockets: linuxutil reads
 * /proc/net/tcp{,6} every interval, and its cost grows with the table).
 *
 * Every agent runs in a cgroup of its own (cgroup v1 cpuacct, else v2 cpu.stat: CPU in ns or µs,
 * every process it starts included, e.g. the clang Retina runs at start-up); `ownCpu*` figures are
 * the agent's process alone (/proc/<pid>/stat, children excluded).
 *
 *  - starts: BENCH_RETINA_STARTS alternated start-ups (ABBA over the subjects), one agent at a time:
 *    milliseconds from exec to the first 200 of GET /metrics (polled every 5 ms from a helper in the
 *    namespace), CPU until then, CPU in the first BENCH_RETINA_STARTUP_S seconds.
 *  - idle: per round, every subject runs at once, started BENCH_RETINA_STAGGER_S apart (the order
 *    rotates from round to round): CPU in the first minute, and settled idle CPU from
 *    BENCH_RETINA_SETTLE_S to BENCH_RETINA_SETTLE_S + BENCH_RETINA_WINDOW_S after each one's start
 *    (120-360 s), as % of one core; noise of the shared machine falls on all of them alike.
 *
 * Subjects: `retina` (its controller, config as its chart writes it, KUBECONFIG pointing at an API
 * server that refuses: no pod-level feature needs one, and it logs the failed version query and goes
 * on; the vmlinux.h its init container writes is made once with bpftool), `current` (this checkout as
 * the image runs it: node, bin/retina-agent's node flags, the bundle; `make bundle` first) and, with
 * BENCH_RETINA_BASE=<checkout with a bundle>, `base` (that checkout the same way). BENCH_RETINA=0
 * leaves Retina out; BENCH_RETINA_BIN=<dir> takes its build from there.
 * BENCH_RETINA_IDLE=0 runs the starts alone. BENCH_RETINA_SHORT=1 is a quick mode for iteration (2 starts, idle window 60-120 s, 1 round).
 * Needs root, kernel BTF, bpftool (and Retina's build: RETINA_GIT_DIR=... hack/retina/build.sh).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { sleep } from '../../test/ebpf/netns.js';
import { ROOT, agentEnv } from '../../test/e2e/agent-process.js';
import { rssSplit } from '../../test/e2e/proc-stats.js';
import { agentNodeFlags } from '../../test/bundle/serving.js';
import { Bed, median } from '../datapath/setup.js';
import { envInt } from '../server/summary.js';
import { Run, retinaBuild, retinaVmlinuxInclude, type Subject } from './cgroup-run.js';

const SHORT = process.env['BENCH_RETINA_SHORT'] === '1';
const STARTS = envInt('BENCH_RETINA_STARTS', SHORT ? 2 : 6);
const STARTUP_S = envInt('BENCH_RETINA_STARTUP_S', 8);
const ROUNDS = envInt('BENCH_RETINA_ROUNDS', SHORT ? 1 : 2);
const SETTLE_S = envInt('BENCH_RETINA_SETTLE_S', SHORT ? 60 : 120);
const WINDOW_S = envInt('BENCH_RETINA_WINDOW_S', SHORT ? 60 : 240);
const STAGGER_S = envInt('BENCH_RETINA_STAGGER_S', SHORT ? 5 : 20);
const SOCKETS = Number(process.env['BENCH_RETINA_SOCKETS'] ?? 300);
const FIRST_MINUTE_S = 60;
if (SETTLE_S < FIRST_MINUTE_S) throw new Error(`BENCH_RETINA_SETTLE_S must be at least ${FIRST_MINUTE_S}`);
const PLUGINS = ['linuxutil', 'packetforward', 'dns'];

const work = mkdtempSync(join(tmpdir(), 'rtbench-retina-'));

/** The image's way to run a checkout: its node, its shim's node flags, its bundle (hack/image/linux.sh). */
function tsSubject(name: string, root: string): Subject {
  const bundle = join(root, 'build', 'bundle', `linux-${process.arch}`, 'retina-agent.mjs');
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run make bundle in ${root}`);
  const node = existsSync(join(root, '.cache', 'node', 'bin', 'node')) ? join(root, '.cache', 'node', 'bin', 'node') : join(ROOT, '.cache', 'node', 'bin', 'node');
  // What the image sets (hack/image/linux.sh: --config.env), read from the checkout's image script.
  const imageEnv: Record<string, string> = { NODE_ENV: 'production' };
  const image = join(root, 'hack', 'image', 'linux.sh');
  for (const e of existsSync(image) ? readFileSync(image, 'utf8').matchAll(/--config\.env (\w+)=(\S+)/g) : []) {
    if (e[1] && e[2]) imageEnv[e[1]] = e[2].replace(/^["']|["']$/g, '');
  }
  // The start-up snapshot beside the bundle when it has one (hack/bundle.mjs; the image's entrypoint runs it).
  const blob = join(dirname(bundle), 'retina-agent.blob');
  const entry = existsSync(blob) ? ['--snapshot-blob', blob, '--'] : [bundle];
  return {
    name, command: [node, ...agentNodeFlags(root), ...entry], env: agentEnv(imageEnv),
    config: (port) => `apiServer:\n  host: 127.0.0.1\n  port: ${port}\nlogLevel: info\nenabledPlugin: [${PLUGINS.join(', ')}]\nmetricsIntervalDuration: 10s\n`,
    args: (file) => ['--config', file],
  };
}

/** Retina's controller as its chart runs it (deploy/standard/.../configmap.yaml, daemonset.yaml). */
function retinaSubject(): Subject {
  const build = retinaBuild();
  if ('missing' in build) throw new Error(build.missing);
  const controller = join(build.dir, 'controller');
  // Its init container's work: vmlinux.h for the programs it compiles at start-up.
  const include = retinaVmlinuxInclude(join(work, 'retina-include'));
  const kubeconfig = join(work, 'refusing.kubeconfig');
  writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: x\n');
  return {
    name: 'retina', command: [controller], env: agentEnv({ KUBECONFIG: kubeconfig, RETINA_VMLINUX_HEADER_DIR: include, NODE_NAME: 'bench', NODE_IP: '10.235.1.1' }),
    config: (port) => [
      'apiServer:', '  host: 127.0.0.1', `  port: ${port}`, 'logLevel: info', `enabledPlugin: ${JSON.stringify(PLUGINS)}`,
      'metricsInterval: 10s', 'metricsIntervalDuration: 10s', 'enableTelemetry: false', 'enablePodLevel: false',
      'enableConntrackMetrics: false', 'remoteContext: false', 'enableAnnotations: false', 'bypassLookupIPOfInterest: false',
      'dataAggregationLevel: low', 'dataSamplingRate: 1', 'packetParserRingBuffer: disabled', 'filterMapMaxEntries: 255', '',
    ].join('\n'),
    args: (file) => ['--config', file, '--health-probe-bind-address=:18081', '--metrics-bind-address=:18080'],
  };
}

/**
 * In the namespace: holds `SOCKETS` loopback TCP connections, and on each input line `{id, port}` polls
 * GET /metrics on 127.0.0.1:port every 5 ms until a 200 has been read whole; answers `{id, t}` with t
 * in ms on the wall clock (performance.timeOrigin + now(), comparable with the bench's own).
 */
const PROBE = `
import { createServer, connect } from 'node:net';
import { get } from 'node:http';
import { createInterface } from 'node:readline';
const n = Number(process.argv[1]);
const held = [];
const srv = createServer((s) => held.push(s)).listen(0, '127.0.0.1', async () => {
  const port = srv.address().port;
  for (let i = 0; i < n; i++) await new Promise((r) => { const c = connect(port, '127.0.0.1', r); held.push(c); });
  process.stdout.write(JSON.stringify({ ready: true }) + '\\n');
});
const now = () => performance.timeOrigin + performance.now();
const poll = (id, port) => {
  const req = get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
    res.resume();
    res.on('end', () => {
      if (res.statusCode === 200) process.stdout.write(JSON.stringify({ id, t: now() }) + '\\n');
      else setTimeout(poll, 5, id, port);
    });
  });
  req.on('error', () => setTimeout(poll, 5, id, port));
};
createInterface({ input: process.stdin }).on('line', (l) => { const m = JSON.parse(l); poll(m.id, m.port); });
`;

class Probe {
  readonly #child: ChildProcess;
  readonly #waiters = new Map<string, (t: number) => void>();
  #ready: Promise<void>;
  constructor(ns: string) {
    this.#child = spawnProbe(ns);
    let ready!: () => void;
    this.#ready = new Promise((r) => (ready = r));
    createInterface({ input: this.#child.stdout! }).on('line', (l) => {
      const m = JSON.parse(l) as { ready?: boolean; id?: string; t?: number };
      if (m.ready) ready();
      else if (m.id !== undefined && m.t !== undefined) this.#waiters.get(m.id)?.(m.t);
    });
  }
  ready(): Promise<void> {
    return this.#ready;
  }
  /** Resolves with the wall-clock ms of the first 200 from /metrics on `port`. */
  first200(id: string, port: number): Promise<number> {
    const p = new Promise<number>((r) => this.#waiters.set(id, r));
    this.#child.stdin!.write(`${JSON.stringify({ id, port })}\n`);
    return p;
  }
  stop(): void {
    this.#child.kill('SIGKILL');
  }
}

function spawnProbe(ns: string): ChildProcess {
  const node = join(ROOT, '.cache', 'node', 'bin', 'node');
  const child = spawn('ip', ['netns', 'exec', ns, node, '--input-type=module', '-e', PROBE, String(SOCKETS)], { stdio: ['pipe', 'pipe', 'inherit'] });
  return child;
}

const subjects: Subject[] = [
  ...(process.env['BENCH_RETINA'] === '0' ? [] : [retinaSubject()]),
  tsSubject('current', ROOT),
  ...(process.env['BENCH_RETINA_BASE'] ? [tsSubject('base', resolve(process.env['BENCH_RETINA_BASE']))] : []),
];
const PORT = (i: number): number => 19_100 + i;
/** Round r's order: rotated, and reversed every other round (ABBA for two subjects). */
const order = (r: number): Subject[] => {
  const rot = subjects.map((_, i) => subjects[(i + Math.floor(r / 2)) % subjects.length] as Subject);
  return r % 2 ? rot.reverse() : rot;
};

type Start = { first200Ms: number; cpuTo200S: number; cpuStartupS: number; ownCpuStartupS: number };
type Idle = { first200Ms: number; cpuFirstMinuteS: number; ownCpuFirstMinuteS: number; settledCpuPercent: number; ownSettledCpuPercent: number; rssMB: number };
const starts: Record<string, Start[]> = {};
const idles: Record<string, Idle[]> = {};
for (const s of subjects) {
  starts[s.name] = [];
  idles[s.name] = [];
}

const load0 = loadavg()[0] ?? 0;
{
  await using bed = new Bed();
  const probe = new Probe(bed.client.name);
  try {
    await probe.ready();
    let seq = 0;
    for (let k = 0; k < STARTS; k++) {
      for (const s of order(k)) {
        await using run = new Run(s, bed.client.name, PORT(0), work);
        const t200 = await Promise.race([probe.first200(`s${seq++}`, run.port), run.proc.exited.then(() => run.alive() as never)]);
        const cpuTo200 = run.cpu();
        await run.until(STARTUP_S);
        starts[s.name]?.push({ first200Ms: Math.round(t200 - run.t0), cpuTo200S: cpuTo200, cpuStartupS: run.cpu(), ownCpuStartupS: run.ownCpu() });
      }
    }
    for (let r = 0; r < (process.env['BENCH_RETINA_IDLE'] === '0' ? 0 : ROUNDS); r++) {
      const runs: Run[] = [];
      try {
        const measured: Promise<void>[] = [];
        for (const [i, s] of order(r).entries()) {
          if (i > 0) await sleep(STAGGER_S * 1000);
          const run = new Run(s, bed.client.name, PORT(i + 1), work);
          runs.push(run);
          measured.push((async () => {
            const t200 = await probe.first200(`r${seq++}`, run.port);
            await run.until(FIRST_MINUTE_S);
            const first = { cpu: run.cpu(), own: run.ownCpu() };
            await run.until(SETTLE_S);
            const c0 = { cpu: run.cpu(), own: run.ownCpu(), age: run.age() };
            await run.until(SETTLE_S + WINDOW_S);
            const wall = run.age() - c0.age;
            idles[s.name]?.push({
              first200Ms: Math.round(t200 - run.t0), cpuFirstMinuteS: first.cpu, ownCpuFirstMinuteS: first.own,
              settledCpuPercent: ((run.cpu() - c0.cpu) / wall) * 100, ownSettledCpuPercent: ((run.ownCpu() - c0.own) / wall) * 100,
              rssMB: rssSplit(run.proc.pid).rssMB,
            });
          })());
        }
        await Promise.all(measured);
      } finally {
        for (const run of runs) await run[Symbol.asyncDispose]();
      }
    }
  } finally {
    probe.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

const r3 = (x: number): number => Number(x.toFixed(3));
const summary = (xs: readonly object[]): Record<string, unknown> => {
  const rows = xs as readonly Record<string, number>[];
  if (!rows[0]) return {};
  return Object.fromEntries(Object.keys(rows[0]).map((k) => [k, { median: r3(median(rows.map((x) => x[k] as number))), each: rows.map((x) => r3(x[k] as number)) }]));
};
console.log(JSON.stringify({
  name: 'agent/retina',
  ...Object.fromEntries(subjects.map((s) => [s.name, { starts: summary(starts[s.name] ?? []), idle: summary(idles[s.name] ?? []) }])),
  conditions: {
    short: SHORT, starts: STARTS, startupSeconds: STARTUP_S, rounds: ROUNDS, settledWindowSeconds: [SETTLE_S, SETTLE_S + WINDOW_S], staggerSeconds: STAGGER_S,
    plugins: PLUGINS, intervalSeconds: 10, sockets: SOCKETS, subjects: Object.fromEntries(subjects.map((s) => [s.name, s.command.join(' ')])),
    kernel: release(), cpus: cpus().length, loadavg1mBefore: r3(load0), loadavg1mAfter: r3(loadavg()[0] ?? 0),
  },
}));
