#!/usr/bin/env node
// `make test`'s suites, in lanes that run side by side: every compiled test file of dist/ falls into the
// first lane that takes it, each lane is one `node --test` process running its files one at a time, and
// the lanes start together. The lanes are cut along what the files share on the machine:
//   kernels  the kernel matrix's amd64 qemu guests, one after another (isolated VMs: nothing of the host's
//            but its cores)
//   arm64    the arm64 kernel's qemu guest
//   node     the real kubelet node (test/node: the machine's one containerd, kubelet and bridge)
//   k8s      the files that use the test control plane (they call startCluster), in order, sharing ONE
//            control plane that this runner starts first (hack/k8s/harness.sh up; harness.ts reuses a
//            running one and leaves it up), each in namespaces of its own
//   unit     the unit tests beside the sources (dist/src)
//   local    the rest: the eBPF, chart, image and Windows files that need no API server
// What lanes still share is arbitrated where it is used: the machine's netfilter drops and TCP losses,
// which the node-level drop and retransmission counts see from every namespace, behind one lock
// (test/ebpf/drop-lock.ts); the real node's hooks and the suites' leftovers checks are scoped to their
// own processes' programs. Measured on this 2-core machine: the lanes take about as long as the
// longest of them, as the lanes spend most of their time waiting (for pods, the guests, timers).
// The k8s lane's output is streamed; each other lane's is printed in one piece when it ends. The last
// lines say each lane's time and counts; the status is 1 if any lane failed. RETINA_TEST_LANES=serial
// runs every file in one lane, one at a time (the old way); TEST_FILES (space-separated) narrows the files.
import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LOGS = join(ROOT, '.cache/test-lanes');
const usesControlPlane = (file) => readFileSync(join(ROOT, file), 'utf8').includes('startCluster(');
const LANES = [
  // The amd64 qemu guests of the kernel matrix (5.10, 6.1, 6.12), one at a time; the arm64 guest
  // (test/kernels/arm64.test.ts, qemu-system-aarch64) in a lane of its own beside them. Each TCG guest keeps one
  // to two host threads busy. They once shared a lane, after two guests beside the other lanes' busiest minutes
  // starved each other (the 5.10 agent took 129 s to start, its suite passed 900 s); that was 5.10's suite
  // waiting 2 x 60 s for a count that never holds still and reading node page by page over 9p (mended). Alone
  // (2026-11-29, polls without processes): 5.10 85 s, 6.1 68 s, 6.12 66 s, arm64 about 120 s; beside the others
  // about twice that.
  { name: 'kernels', takes: (f) => f === 'dist/test/kernels/matrix.test.js', timeoutMs: 60 * 60_000 },
  { name: 'arm64', takes: (f) => f === 'dist/test/kernels/arm64.test.js', timeoutMs: 60 * 60_000 },
  // The real-node suite: about 6 minutes, plus its waits for the drop lock (test/ebpf/drop-lock.ts).
  { name: 'node', takes: (f) => f.startsWith('dist/test/node/'), timeoutMs: 30 * 60_000 },
  { name: 'k8s', takes: usesControlPlane, controlPlane: true },
  // The unit tests beside the sources (dist/src): no network namespace, eBPF program, fixed port or control
  // plane, so they need not wait behind the local lane's machine-wide files.
  { name: 'unit', takes: (f) => f.startsWith('dist/src/') },
  { name: 'local', takes: () => true },
];
const NODE_TEST = ['--test', '--test-concurrency=1', '--test-reporter=spec'];
/** node --test's --test-timeout, which also bounds each file's run as a whole. */
const TIMEOUT_MS = 600_000;

function testFiles() {
  if (process.env.TEST_FILES) return process.env.TEST_FILES.split(/\s+/).filter(Boolean);
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.test.js')) out.push(relative(ROOT, p));
    }
  };
  for (const d of ['dist/src', 'dist/test']) if (existsSync(join(ROOT, d))) walk(join(ROOT, d));
  return out.sort();
}

function assign(files) {
  const lanes = process.env.RETINA_TEST_LANES === 'serial'
    ? [{ name: 'serial', takes: () => true, controlPlane: true, timeoutMs: LANES[0].timeoutMs }]
    : LANES;
  const out = lanes.map((l) => ({ ...l, files: [] }));
  for (const f of files) out.find((l) => l.takes(f)).files.push(f);
  return out.filter((l) => l.files.length);
}

/** The spec reporter's closing counts (ℹ tests N, ℹ pass N, ...) and every failed test's line. */
function summary(log) {
  const n = (k) => Number(new RegExp(`^ℹ ${k} (\\d+)$`, 'm').exec(log)?.[1] ?? NaN);
  const failed = [...new Set(log.split('\n').filter((l) => /^\s*✖ /.test(l) && !/failing tests/.test(l)).map((l) => l.trim()))];
  return { tests: n('tests'), pass: n('pass'), fail: n('fail'), cancelled: n('cancelled'), skipped: n('skipped'), todo: n('todo'), failed, why: reasons(log) };
}

/** How many lines of a lane's first failed test's error the closing summary prints (of any other failed test: 4). */
const FIRST_REASON_LINES = 16;

/**
 * Each failed test's error message (without its stack), from the reporter's closing "failing tests" list, by
 * the test's line: printed under it in the closing summary, which is the part of a CI run's output one sees.
 */
function reasons(log) {
  const out = new Map();
  const at = log.lastIndexOf('✖ failing tests:');
  if (at < 0) return out;
  let name;
  for (const line of log.slice(at).split('\n').slice(1)) {
    if (/^\s*✖ /.test(line)) {
      name = line.trim();
      out.set(name, []);
    } else if (!line.trim()) {
      continue;
    } else if (!/^\s/.test(line) || /^\s+at /.test(line)) {
      name = undefined; // the next test's "test at" line, the stack, or the reporter's output ended
    } else if (name) {
      const lines = out.get(name);
      if (lines.length < FIRST_REASON_LINES) lines.push(line.trim().slice(0, 400));
    }
  }
  return out;
}

function runLane(lane, stream) {
  mkdirSync(LOGS, { recursive: true });
  const logFile = join(LOGS, `${lane.name}.log`);
  const log = createWriteStream(logFile);
  const t0 = Date.now();
  return new Promise((resolve) => {
    // Through a shell that waits for the lane and then writes its own /proc stat: its children's CPU (cutime,
    // cstime) is the lane's, every process the lane's files started and reaped included.
    const statFile = join(LOGS, `${lane.name}.stat`);
    rmSync(statFile, { force: true });
    const c = spawn('/bin/sh', ['-c', '"$@"; rc=$?; cat /proc/$$/stat >"$STAT_FILE"; exit $rc', 'lane', process.execPath, ...NODE_TEST, `--test-timeout=${lane.timeoutMs ?? TIMEOUT_MS}`, ...lane.files], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, STAT_FILE: statFile } });
    for (const s of [c.stdout, c.stderr]) {
      s.on('data', (d) => {
        log.write(d);
        if (stream) process.stdout.write(d);
      });
    }
    c.on('close', (code, signal) => {
      log.end(() => {
        const text = readFileSync(logFile, 'utf8');
        if (!stream) process.stdout.write(`\n──── lane ${lane.name} (${lane.files.length} files), its output ────\n${text}`);
        resolve({ lane, code: code ?? (signal ? 128 : 1), seconds: Math.round((Date.now() - t0) / 1000), cpuSeconds: childCpuSeconds(statFile), ...summary(text) });
      });
    });
  });
}

/** The children's CPU seconds (cutime + cstime, in clock ticks of 1/100 s) from a /proc/<pid>/stat line; NaN without it. */
function childCpuSeconds(statFile) {
  try {
    const f = readFileSync(statFile, 'utf8').split(') ')[1].split(' ');
    return Math.round((Number(f[13]) + Number(f[14])) / 100);
  } catch {
    return NaN;
  }
}

function harness(cmd) {
  execFileSync(join(ROOT, 'hack/k8s/harness.sh'), [cmd], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
}

// One run of the lanes per checkout at a time: a second would share the first's control plane and logs.
const RUN_LOCK = join(LOGS, 'run.pid');
mkdirSync(LOGS, { recursive: true });
{
  let other = 0;
  try {
    other = Number(readFileSync(RUN_LOCK, 'utf8'));
  } catch {
    // no earlier run
  }
  let alive = false;
  try {
    if (other > 0 && other !== process.pid) alive = process.kill(other, 0);
  } catch (e) {
    alive = e.code === 'EPERM';
  }
  if (alive) {
    process.stderr.write(`hack/test/lanes.mjs: another run (pid ${other}) is using this checkout's lanes and test control plane; wait for it or stop it\n`);
    process.exit(1);
  }
  writeFileSync(RUN_LOCK, String(process.pid));
  process.once('exit', () => rmSync(RUN_LOCK, { force: true }));
}
const lanes = assign(testFiles());
const t0 = Date.now();
/** The machine's busy and total CPU seconds so far (/proc/stat's first line, clock ticks of 1/100 s). */
const machineCpu = () => {
  try {
    const v = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
    const idle = v[3] + v[4];
    const all = v.reduce((a, b) => a + b, 0);
    return { busy: (all - idle) / 100, all: all / 100 };
  } catch {
    return { busy: NaN, all: NaN };
  }
};
const cpu0 = machineCpu();
// One control plane for every file of the lane that uses it (stopped at the end, whatever happened).
const cpLane = lanes.find((l) => l.controlPlane && l.files.some(usesControlPlane));
const shareControlPlane = process.env.RETINA_TEST_SHARED_CONTROL_PLANE !== '0' && cpLane !== undefined;
if (shareControlPlane) harness('up');
const streamed = cpLane ?? lanes[0];
let results;
try {
  process.stdout.write(`test lanes: ${lanes.map((l) => `${l.name} ${l.files.length} files`).join(', ')}${shareControlPlane ? `; one test control plane for the ${cpLane.name} lane` : ''}\n`);
  results = await Promise.all(lanes.map((l) => runLane(l, l === streamed)));
} finally {
  if (shareControlPlane) {
    try {
      harness('down');
    } catch (e) {
      process.stderr.write(`hack/k8s/harness.sh down failed: ${e.message}\n`);
    }
  }
}
process.stdout.write('\n──── lanes ────\n');
for (const r of results) {
  const ok = r.code === 0;
  process.stdout.write(`${ok ? '✔' : '✖'} lane ${r.lane.name}: ${r.seconds} s (${r.cpuSeconds} s of CPU), ${r.lane.files.length} files, tests ${r.tests} pass ${r.pass} fail ${r.fail} cancelled ${r.cancelled} skipped ${r.skipped} todo ${r.todo} (exit ${r.code}; log .cache/test-lanes/${r.lane.name}.log)\n`);
  for (const f of r.failed) {
    process.stdout.write(`    ${f}\n`);
    for (const w of (r.why?.get(f) ?? []).slice(0, 4)) process.stdout.write(`        ${w}\n`);
  }
}
// A lane's first failure is often the cause of the rest (a suite's set-up case, then every case that builds on
// it), and a CI run shows only the last lines: each failed lane's first failed test comes again, last, with more
// of its error.
for (const r of results) {
  const [first] = r.failed;
  if (!first || r.failed.length < 2) continue;
  process.stdout.write(`first of lane ${r.lane.name}'s ${r.failed.length} failed: ${first}\n`);
  for (const w of r.why?.get(first) ?? []) process.stdout.write(`        ${w}\n`);
}
const total = results.reduce((a, r) => ({ tests: a.tests + (r.tests || 0), fail: a.fail + (r.fail || 0) }), { tests: 0, fail: 0 });
const cpu1 = machineCpu();
process.stdout.write(`machine: ${Math.round(cpu1.busy - cpu0.busy)} s of CPU busy of ${Math.round(cpu1.all - cpu0.all)} (${Math.round((100 * (cpu1.busy - cpu0.busy)) / (cpu1.all - cpu0.all))} %), the lanes' own ${results.reduce((a, r) => a + (r.cpuSeconds || 0), 0)} s\n`);
process.stdout.write(`all lanes: ${Math.round((Date.now() - t0) / 1000)} s, ${total.tests} tests, ${total.fail} failed\n`);
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
