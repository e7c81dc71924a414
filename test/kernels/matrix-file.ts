/**
 * bench/kernels/matrix.json (what the kernel matrix last saw, per kernel) and the part of docs/kernels.md
 * generated from it, between the markers below.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../e2e/agent-process.js';
import { pluginTable, verifierTable, type Column, type KernelReport } from './report.js';

export const MATRIX_FILE = join(ROOT, 'bench/kernels/matrix.json');
export const DOCS_FILE = join(ROOT, 'docs/kernels.md');
const BEGIN = '<!-- kernel matrix: generated from bench/kernels/matrix.json by test/kernels/matrix.test.ts; do not edit -->';
const END = '<!-- end of the kernel matrix -->';

export function readMatrix(): Column[] {
  return existsSync(MATRIX_FILE) ? (JSON.parse(readFileSync(MATRIX_FILE, 'utf8')) as Column[]) : [];
}

/**
 * Writes `columns` into bench/kernels/matrix.json, each replacing the file's column of its name (the
 * host's column and the guests' are run by two files, test/kernels/host.test.ts and matrix.test.ts),
 * in the order host, then the pinned kernels as `order` lists them; then docs/kernels.md's part from it.
 */
export function writeColumns(columns: readonly Column[], order: readonly string[]): void {
  const byName = new Map(readMatrix().map((c) => [c.name, c]));
  for (const c of columns) byName.set(c.name, c);
  const rank = (n: string): number => (n === 'host' ? -1 : order.indexOf(n) < 0 ? order.length : order.indexOf(n));
  const all = [...byName.values()].sort((a, b) => rank(a.name) - rank(b.name));
  writeFileSync(MATRIX_FILE, `${JSON.stringify(all, null, 1)}\n`);
  writeFileSync(DOCS_FILE, renderDocs(readFileSync(DOCS_FILE, 'utf8'), all));
}

/** What must not change between two runs on one kernel: the hooks, programs and modes, each program's verdict and verifier figures. */
export function comparable(r: KernelReport): unknown {
  return {
    release: r.release,
    plugins: Object.fromEntries(Object.entries(r.plugins).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, { loaded: v.loaded, hook: v.hook, program: v.program, mode: v.mode, reasons: v.reasons, sweep: v.sweep }])),
    programs: r.programs.map((p) => ({ program: p.program, accepted: p.accepted, insns: p.insns, totalStates: p.totalStates, peakStates: p.peakStates })),
  };
}

/** docs/kernels.md with its generated part made from `columns`. */
export function renderDocs(doc: string, columns: readonly Column[]): string {
  const i = doc.indexOf(BEGIN);
  const j = doc.indexOf(END);
  if (i < 0 || j < i) throw new Error(`${DOCS_FILE} has no generated part (the markers ${BEGIN} ... ${END})`);
  const body = [
    BEGIN,
    '',
    'What each plugin took on each kernel the matrix boots (`make test` runs it: `test/kernels/matrix.test.ts`), and what',
    'it counted against the kernel\'s own counter on its last run (ours/the kernel\'s):',
    '',
    pluginTable(columns),
    '',
    'The verifier budget: instructions processed and states per program, each loaded alone (the limit is 1 000 000',
    'instructions processed on every kernel here; the matrix fails a program past half of it). Load times are in',
    '`bench/kernels/matrix.json`.',
    '',
    verifierTable(columns),
    '',
    END,
  ].join('\n');
  return doc.slice(0, i) + body + doc.slice(j + END.length);
}
