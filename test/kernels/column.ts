/**
 * One column of the kernel matrix: the pinned kernels (hack/kernels/versions), running the suite
 * (suite.ts) and checking its report, and the comparison with bench/kernels/matrix.json. Used by
 * host.test.ts (this machine's kernel) and matrix.test.ts (the pinned kernels under qemu).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../e2e/agent-process.js';
import type { KernelReport } from './report.js';
import { MATRIX_FILE, comparable, readMatrix } from './matrix-file.js';

export const UPDATE = process.env['RETINA_KERNEL_MATRIX_UPDATE'] === '1';

export interface Pin {
  readonly name: string;
  readonly version: string;
  readonly dir: string;
}

const tools = process.env['RETINA_TOOLS_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'retina-ts');
export const pins: Pin[] = readFileSync(join(ROOT, 'hack/kernels/versions'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'))
  .map((l) => {
    const [name, , , version] = l.trim().split(/\s+/) as [string, string, string, string];
    return { name, version, dir: join(tools, 'kernels', `${name}-${version}`) };
  });

export const SUITE = join(ROOT, 'dist/test/kernels/suite.js');
/**
 * The suite's environment inside a guest: its waits bounded by timeouts 4 times the native ones
 * (test/ebpf/netns.ts TIME_SCALE). Under TCG an agent that starts in 1-2 s here took more than the
 * native 30 s bound when `make test`'s other lanes held the host's two cores (CI, 2026-11-28).
 */
export const GUEST_ENV = 'RETINA_TEST_TIME_SCALE=4';

/** Runs a command; resolves with its status and output (stdout and stderr together). */
export function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; out: string }> {
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

export function check(name: string, code: number | null, log: string, reportFile: string): KernelReport {
  assert.ok(existsSync(reportFile), `${name}: the suite wrote no report (status ${code}):\n${log.slice(-3000)}`);
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as KernelReport;
  assert.equal(code, 0, `kernel ${name} (${report.release}): the suite failed:\n${failures(log)}`);
  return report;
}

/** The column bench/kernels/matrix.json holds for `name`, compared on what does not vary from run to run. */
export function compareWithFile(name: string, report: KernelReport): void {
  if (UPDATE) return;
  const file = readMatrix().find((c) => c.name === name);
  assert.ok(file, `${MATRIX_FILE} has no column ${name}: RETINA_KERNEL_MATRIX_UPDATE=1 make kernels writes it`);
  if (name === 'host' && file.report.release !== report.release) return; // another machine's kernel: its own figures
  assert.deepEqual(comparable(report), comparable(file.report), `kernel ${name}: what the matrix saw differs from ${MATRIX_FILE} (RETINA_KERNEL_MATRIX_UPDATE=1 make kernels writes what it sees, and docs/kernels.md with it)`);
}
