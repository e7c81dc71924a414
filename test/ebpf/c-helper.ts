/**
 * Small C programs the tests and benchmarks run (a TAP writer, a packet generator), built here with
 * the host's clang (installed by make) into .cache/helpers/, and rebuilt when their source changes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The binary built from `source` (a path from the repository root, e.g. `test/ebpf/tapfrags.c`). */
export function cHelper(source: string): string {
  const src = `${ROOT}${source}`;
  const bin = `${ROOT}.cache/helpers/${basename(source, '.c')}`;
  if (!existsSync(bin) || statSync(bin).mtimeMs < statSync(src).mtimeMs) {
    mkdirSync(`${ROOT}.cache/helpers`, { recursive: true });
    const cc = ['clang-14', 'clang', 'cc'].find((c) => {
      try {
        execFileSync('sh', ['-c', `command -v ${c}`]);
        return true;
      } catch {
        return false;
      }
    });
    if (!cc) throw new Error(`no C compiler (clang) to build ${source}`);
    execFileSync(cc, ['-O2', '-Wall', '-o', bin, src], { stdio: 'inherit' });
  }
  return bin;
}
