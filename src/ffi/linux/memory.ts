/**
 * Pages of mapped files that the process read once and no longer uses, taken out of its RSS.
 *
 * About 50 MB of an agent's RSS are pages of the `node` binary and its shared libraries
 * (bench/agent/README.md): start-up reads node's snapshot and builtin sources, the dynamic linker
 * walks 9 MB of symbol tables for each `dlopen`, the compilers run once for start-up's functions. The
 * pages stay mapped until memory runs short, so they count in RSS (and in the pod's working set)
 * long after their last use. `madvise(MADV_DONTNEED)` on a private, read-only file mapping with no
 * private copy of any page drops the process's page-table entries and nothing else: the pages stay
 * in the page cache, and a page used again comes back on its first touch (a minor fault, no disk
 * read). It is what the kernel's own reclaim does to such pages under memory pressure, done early.
 *
 * Which mappings: a regular file's (a path, not `(deleted)`), without write permission, private,
 * and with `Anonymous: 0 kB` in `/proc/self/smaps` (no page of it was ever copied on write, so the
 * file holds every byte the process sees). Anything else (the heap, V8's spaces, ring buffers,
 * relocated `.data.rel.ro`) is never touched.
 */
import { readFileSync } from 'node:fs';
import koffi from '../koffi.js';
import { libcLibrary } from './libc.js';

const MADV_DONTNEED = 4;

/** One mapping of /proc/self/smaps, with the fields the choice needs. */
export interface FileMapping {
  readonly start: bigint;
  readonly end: bigint;
  readonly perms: string;
  readonly path: string;
  /** Resident kB. */
  readonly rssKb: number;
  /** kB of the mapping's private copies (copy-on-write, or anonymous memory). */
  readonly anonymousKb: number;
}

const HEADER = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \d+ *(.*)$/;

/** The mappings of an smaps text (Rss and Anonymous read; the other fields skipped). */
export function parseSmaps(text: string): FileMapping[] {
  const out: { start: bigint; end: bigint; perms: string; path: string; rssKb: number; anonymousKb: number }[] = [];
  let cur: (typeof out)[number] | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('Rss:')) {
      if (cur) cur.rssKb = Number.parseInt(line.slice(4), 10);
    } else if (line.startsWith('Anonymous:')) {
      if (cur) cur.anonymousKb = Number.parseInt(line.slice(10), 10);
    } else {
      const m = HEADER.exec(line);
      if (m) {
        // Anonymous unknown until read: -1 keeps a mapping whose smaps entry is cut short out of the choice.
        cur = { start: BigInt(`0x${m[1]}`), end: BigInt(`0x${m[2]}`), perms: m[3] as string, path: m[4] as string, rssKb: 0, anonymousKb: -1 };
        out.push(cur);
      }
    }
  }
  return out;
}

/** Whether the pages of `m` may be dropped: a regular file's, read-only, private, never copied on write. */
export function droppable(m: FileMapping): boolean {
  return m.path.startsWith('/') && !m.path.endsWith(' (deleted)') && !m.path.startsWith('/memfd:') && !m.path.startsWith('/dev/')
    && m.perms[1] === '-' && m.perms[3] === 'p' && m.anonymousKb === 0 && m.rssKb > 0;
}

export interface ReleasedPages {
  /** Mappings whose pages were dropped. */
  readonly mappings: number;
  /** Resident bytes they held. */
  readonly bytes: number;
  /** Mappings madvise refused (with the first errno), left as they were. */
  readonly refused: number;
  readonly firstErrno?: number;
}

let madvise: ((addr: bigint, len: bigint, advice: number) => number) | undefined;

/**
 * Drops this process's resident pages of read-only file mappings (see the file's header). Returns
 * what it dropped; throws only when /proc/self/smaps or libc cannot be read.
 */
export function releaseCleanFilePages(smaps = (): string => readFileSync('/proc/self/smaps', 'utf8')): ReleasedPages {
  madvise ??= libcLibrary().func('int madvise(uintptr_t addr, size_t length, int advice)') as unknown as (addr: bigint, len: bigint, advice: number) => number;
  let mappings = 0;
  let kb = 0;
  let refused = 0;
  let firstErrno: number | undefined;
  for (const m of parseSmaps(smaps())) {
    if (!droppable(m)) continue;
    if (madvise(m.start, m.end - m.start, MADV_DONTNEED) === 0) {
      mappings++;
      kb += m.rssKb;
    } else {
      refused++;
      firstErrno ??= koffi.errno();
    }
  }
  return { mappings, bytes: kb * 1024, refused, ...(firstErrno === undefined ? {} : { firstErrno }) };
}
