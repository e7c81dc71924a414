/**
 * Small C programs the tests and benchmarks run (a TAP writer, a packet generator) and small BPF
 * objects they attach (a foreign tc program), built here with the host's clang (installed by make)
 * into .cache/helpers/, and rebuilt when their source changes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** `out` (under .cache/helpers/) built from `source` with `flags`, when missing or older than the source. */
function built(source: string, out: string, flags: readonly string[], compilers: readonly string[]): string {
  const src = `${ROOT}${source}`;
  const bin = `${ROOT}.cache/helpers/${out}`;
  if (!existsSync(bin) || statSync(bin).mtimeMs < statSync(src).mtimeMs) {
    mkdirSync(`${ROOT}.cache/helpers`, { recursive: true });
    const cc = compilers.find((c) => {
      try {
        execFileSync('sh', ['-c', `command -v ${c}`]);
        return true;
      } catch {
        return false;
      }
    });
    if (!cc) throw new Error(`no C compiler (${compilers.join(', ')}) to build ${source}`);
    execFileSync(cc, [...flags, '-o', bin, src], { stdio: 'inherit' });
  }
  return bin;
}

/** The binary built from `source` (a path from the repository root, e.g. `test/ebpf/tapfrags.c`). */
export function cHelper(source: string): string {
  return built(source, basename(source, '.c'), ['-O2', '-Wall'], ['clang-14', 'clang', 'cc']);
}

/** The BPF object built from `source` (e.g. `test/ebpf/foreign.bpf.c`) with clang -target bpf. */
export function bpfHelper(source: string): string {
  return built(source, basename(source, '.c') + '.o', ['-O2', '-g', '-Wall', '-target', 'bpf', '-c'], ['clang-14', 'clang']);
}
