#!/usr/bin/env node
// `make test`'s suites, in lanes that run side by side: every compiled test file of dist/ falls into the
// first lane that takes it, each lane is one `node --test` process running its files one at a time, and
// the lanes start together. The lanes are cut along what the files share on the machine:
//   kernels  the qemu guests, one after another: the kernel matrix's and the arm64 kernel's
//            (isolated VMs: nothing of the host's but its cores)
//   node     the real kubelet node (test/node: the machine's one containerd, kubelet and bridge)
//   k8s      the files that use the test control plane (they call startCluster), in order, sharing ONE
//            control plane that this runner starts first (hack/k8s/harness.sh up; harness.ts reuses a
//            running one and leaves it up), each in namespaces of its own
//   local    the rest: unit tests, and the eBPF, chart, image and Windows files that need no API server
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
  // The qemu guests, one at a time: the matrix's three amd64 kernels and the arm64 kernel
  // (test/kernels/arm64.test.ts, qemu-system-aarch64). Each TCG guest keeps two host threads busy; two guests
  // beside the other lanes' busiest minutes (the first ten) starved each other: the 5.10 guest's agent took
  // 129 s to start and its suite passed 900 s, while 6.1 and 6.12 then ran in about 3 minutes each once the
  // arm64 guest had ended (make test, 2026-11-29). About 6 minutes alone, 15-25 beside the others.
  { name: 'kernels', takes: (f) => f === 'dist/test/kernels/matrix.test.js' || f === 'dist/test/kernels/arm64.test.js', timeoutMs: 60 * 60_000 },
  // The real-node suite: about 6 minutes, plus its waits for the drop lock (test/ebpf/drop-lock.ts).
  { name: 'node', takes: (f) => f.startsWith('dist/test/node/'), timeoutMs: 30 * 60_000 },
  { name: 'k8s', takes: usesControlPlane, controlPlane: true },
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
  return { tests: n('tests'), pass: n('pass'), fail: n('fail'), cancelled: n('cancelled'), skipped: n('skipped'), todo: n('todo'), failed };
}

function runLane(lane, stream) {
  mkdirSync(LOGS, { recursive: true });
  const logFile = join(LOGS, `${lane.name}.log`);
  const log = createWriteStream(logFile);
  const t0 = Date.now();
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [...NODE_TEST, `--test-timeout=${lane.timeoutMs ?? TIMEOUT_MS}`, ...lane.files], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
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
        resolve({ lane, code: code ?? (signal ? 128 : 1), seconds: Math.round((Date.now() - t0) / 1000), ...summary(text) });
      });
    });
  });
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
  process.stdout.write(`${ok ? '✔' : '✖'} lane ${r.lane.name}: ${r.seconds} s, ${r.lane.files.length} files, tests ${r.tests} pass ${r.pass} fail ${r.fail} cancelled ${r.cancelled} skipped ${r.skipped} todo ${r.todo} (exit ${r.code}; log .cache/test-lanes/${r.lane.name}.log)\n`);
  for (const f of r.failed) process.stdout.write(`    ${f}\n`);
}
const total = results.reduce((a, r) => ({ tests: a.tests + (r.tests || 0), fail: a.fail + (r.fail || 0) }), { tests: 0, fail: 0 });
process.stdout.write(`all lanes: ${Math.round((Date.now() - t0) / 1000)} s, ${total.tests} tests, ${total.fail} failed\n`);
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
