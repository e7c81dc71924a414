/**
 * The kernel matrix (issue 36): the suite of every Linux plugin (suite.ts) on this machine's kernel and
 * inside each kernel of hack/kernels/versions (Debian's 5.10, 6.1, 6.12), booted under qemu (TCG) with
 * this checkout (hack/kernels/boot.sh). A failure names the kernel and carries the suite's failed checks
 * (the plugin, the program, the verifier's words). What each kernel showed is compared with
 * bench/kernels/matrix.json (hooks, programs, reasons mode, verifier instructions and states): a change
 * of any is a failure until `RETINA_KERNEL_MATRIX_UPDATE=1 make kernels` writes the new figures,
 * from which docs/kernels.md's table is generated (test/kernels/docs.test.ts keeps the two in step).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, nodeBinary } from '../e2e/agent-process.js';
import { verifierTable, type Column, type KernelReport } from './report.js';
import { MATRIX_FILE, comparable, readMatrix, renderDocs, DOCS_FILE } from './matrix-file.js';

interface Pin {
  readonly name: string;
  readonly version: string;
  readonly dir: string;
}

const tools = process.env['RETINA_TOOLS_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'retina-ts');
const pins: Pin[] = readFileSync(join(ROOT, 'hack/kernels/versions'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'))
  .map((l) => {
    const [name, , , version] = l.trim().split(/\s+/) as [string, string, string, string];
    return { name, version, dir: join(tools, 'kernels', `${name}-${version}`) };
  });

const SUITE = join(ROOT, 'dist/test/kernels/suite.js');
const seen: Column[] = [];

/** Runs a command; resolves with its status and output (stdout and stderr together). */
function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (out += d.toString()));
    c.on('close', (code) => resolve({ code, out }));
  });
}

/** The suite's failed checks, from its spec output: each "✖" line with the lines after it. */
function failures(log: string): string {
  const lines = log.split('\n');
  const out: string[] = [];
  lines.forEach((l, i) => {
    if (/^\s*✖/.test(l) && !/^\s*✖ failing tests/.test(l)) out.push(...lines.slice(i, i + 8));
  });
  return (out.join('\n') || log.slice(-3000)).slice(0, 6000);
}

function check(name: string, code: number | null, log: string, reportFile: string): KernelReport {
  assert.ok(existsSync(reportFile), `${name}: the suite wrote no report (status ${code}):\n${log.slice(-3000)}`);
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as KernelReport;
  seen.push({ name, report });
  assert.equal(code, 0, `kernel ${name} (${report.release}): the suite failed:\n${failures(log)}`);
  return report;
}

/** The column bench/kernels/matrix.json holds for `name`, compared on what does not vary from run to run. */
function compareWithFile(name: string, report: KernelReport): void {
  if (process.env['RETINA_KERNEL_MATRIX_UPDATE'] === '1') return;
  const file = readMatrix().find((c) => c.name === name);
  assert.ok(file, `${MATRIX_FILE} has no column ${name}: RETINA_KERNEL_MATRIX_UPDATE=1 make kernels writes it`);
  if (name === 'host' && file.report.release !== report.release) return; // another machine's kernel: its own figures
  assert.deepEqual(comparable(report), comparable(file.report), `kernel ${name}: what the matrix saw differs from ${MATRIX_FILE} (RETINA_KERNEL_MATRIX_UPDATE=1 make kernels writes what it sees, and docs/kernels.md with it)`);
}

test('this machine\'s kernel', { timeout: 900_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rtk-host-'));
  try {
    const reportFile = join(dir, 'report.json');
    // NODE_TEST_CONTEXT would make the child a subtest reporter of this runner rather than a runner of its own.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const r = await run(nodeBinary(), ['--test', '--test-concurrency=1', '--test-reporter=spec', '--test-timeout=600000', SUITE], { ...env, RETINA_KERNEL_REPORT: reportFile });
    const report = check('host', r.code, r.out, reportFile);
    t.diagnostic(`host ${report.release}: ${JSON.stringify(report.counts)}`);
    compareWithFile('host', report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const pin of pins) {
  test(`kernel ${pin.name} (${pin.version}) under qemu`, { timeout: 1_200_000 }, async (t) => {
    assert.ok(existsSync(join(pin.dir, '.complete')), `kernel ${pin.name} is not fetched into ${pin.dir}: make kernels (hack/kernels/fetch.sh) fetches it`);
    const out = mkdtempSync(join(tmpdir(), `rtk-${pin.name}-`));
    try {
      const node = nodeBinary();
      writeFileSync(
        join(out, 'run.sh'),
        [
          `cd '${ROOT}'`,
          `export PATH='${node.includes('/') ? join(node, '..') : '/usr/bin'}':$PATH RETINA_KERNEL_REPORT=/mnt/out/report.json`,
          `exec '${node}' --test --test-concurrency=1 --test-reporter=spec --test-timeout=900000 '${SUITE}'`,
          '',
        ].join('\n'),
      );
      const t0 = Date.now();
      const boot = await run(join(ROOT, 'hack/kernels/boot.sh'), [pin.dir, out, '1100']);
      const log = existsSync(join(out, 'run.log')) ? readFileSync(join(out, 'run.log'), 'utf8') : '';
      const report = check(pin.name, boot.code, `${log}\n${boot.out}`, join(out, 'report.json'));
      t.diagnostic(`${pin.name} ${report.release}: ${Math.round((Date.now() - t0) / 1000)} s under qemu; ${JSON.stringify(report.counts)}`);
      compareWithFile(pin.name, report);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
}

test('the verifier budget per program per kernel, and the files written when asked', (t) => {
  assert.equal(seen.length, pins.length + 1, 'every kernel reported');
  t.diagnostic(`\n${verifierTable(seen)}`);
  for (const c of seen) {
    for (const p of c.report.programs) if (p.accepted) t.diagnostic(`${c.name} ${p.program}: ${p.insns} insns, ${p.totalStates} states, load ${p.loadMs} ms${p.verificationUs ? `, verification ${p.verificationUs} us` : ''}`);
  }
  if (process.env['RETINA_KERNEL_MATRIX_UPDATE'] === '1') {
    writeFileSync(MATRIX_FILE, `${JSON.stringify(seen, null, 1)}\n`);
    writeFileSync(DOCS_FILE, renderDocs(readFileSync(DOCS_FILE, 'utf8'), seen));
  }
});
