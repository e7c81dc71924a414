/**
 * Where kernel functions lie, from /proc/kallsyms: the no-reason fallback (kernels before 5.17)
 * names a drop NETFILTER_DROP when kfree_skb's caller address lies inside a netfilter function. Read
 * at load, twice, in 64 KiB chunks (the file is ~5 MB of text; only the wanted addresses are kept):
 * first the functions' starts, then for each the next higher address of any symbol, where it ends
 * (module symbols are not listed in address order, so "the next line" is not enough).
 */
import { closeSync, openSync, readSync } from 'node:fs';

export interface SymbolRange {
  readonly name: string;
  /** The function's first byte. */
  readonly start: bigint;
  /** The lowest address of another symbol above it: the function ends before it. */
  readonly end: bigint;
}

/** Calls `fn(address, name)` per line of /proc/kallsyms text (`name` without a `\t[module]` tail). */
function eachSymbol(chunks: Iterable<string>, fn: (addr: string, name: string) => void): void {
  let rest = '';
  const line = (l: string): void => {
    const sp1 = l.indexOf(' ');
    const sp2 = l.indexOf(' ', sp1 + 1);
    if (sp1 <= 0 || sp2 < 0) return;
    const tab = l.indexOf('\t', sp2 + 1);
    fn(l.slice(0, sp1), l.slice(sp2 + 1, tab < 0 ? undefined : tab));
  };
  for (const chunk of chunks) {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) line(l);
  }
  if (rest) line(rest);
}

/**
 * The ranges of the functions `names` in kallsyms text (`read()` yields it anew each call). A name
 * missing, or every address 0 (kptr_restrict, no CAP_SYSLOG), gives no range.
 */
export function findSymbolRanges(read: () => Iterable<string>, names: readonly string[]): SymbolRange[] {
  const starts = new Map<string, string>();
  const wanted = new Set(names);
  eachSymbol(read(), (addr, name) => {
    if (wanted.has(name) && !starts.has(name)) starts.set(name, addr);
  });
  // Addresses compared as text: kallsyms prints them all with the same number of hex digits.
  const found = [...starts].filter(([, a]) => /[1-9a-f]/.test(a));
  if (!found.length) return [];
  const ends = new Map<string, string>();
  eachSymbol(read(), (addr) => {
    for (const [name, start] of found) {
      if (addr.length !== start.length || addr <= start) continue;
      const end = ends.get(name);
      if (end === undefined || addr < end) ends.set(name, addr);
    }
  });
  return found.flatMap(([name, start]) => {
    const end = ends.get(name);
    return end === undefined ? [] : [{ name, start: BigInt(`0x${start}`), end: BigInt(`0x${end}`) }];
  });
}

/** 64 KiB chunks of a file (procfs files have no size; read until EOF). */
export function* fileChunks(path: string): Generator<string> {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 16);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n <= 0) return;
      yield buf.toString('latin1', 0, n);
    }
  } finally {
    closeSync(fd);
  }
}

/** The ranges of `names` in the running kernel (see findSymbolRanges). */
export function kernelSymbolRanges(names: readonly string[], path = '/proc/kallsyms'): SymbolRange[] {
  return findSymbolRanges(() => fileChunks(path), names);
}
