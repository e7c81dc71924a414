/**
 * Reads the /proc/net files of the calling process's network namespace and turns them into the
 * protocol rows. A file that cannot be read is reported as a failure and its families are left
 * out (or computed from what remains); an optional file that does not exist (no IPv6) is fine.
 * Read synchronously: procfs text is made in memory, and each asynchronous read took four trips
 * through libuv's thread pool (open, stat, read, close), about 35 thread wake-ups a tick.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseNameValueLines, parseSectionPairs } from './counters.js';
import { protocolRows, snmp6Sections, type ProtocolRows } from './curated.js';
import { addCounts, parseSocketTable, type SocketCounts } from './sockets.js';

export const PROC_FILES = {
  tcp: { path: 'net/tcp', optional: false },
  tcp6: { path: 'net/tcp6', optional: true },
  udp: { path: 'net/udp', optional: false },
  udp6: { path: 'net/udp6', optional: true },
  netstat: { path: 'net/netstat', optional: false },
  snmp: { path: 'net/snmp', optional: false },
  snmp6: { path: 'net/snmp6', optional: true },
} as const;
export type ProcFile = keyof typeof PROC_FILES;

export interface ReadFailure {
  readonly what: string;
  readonly error: unknown;
}

export interface ProcReading {
  readonly rows: ProtocolRows;
  /** Files that exist but could not be read (or required files that are missing). */
  readonly failures: readonly ReadFailure[];
  /** Lines that did not parse, each naming its file and line. */
  readonly issues: readonly string[];
}

/**
 * Each file's text and what it parsed to, last time: a file whose text did not change is not
 * parsed again (the socket tables of an idle node rarely change). Parse results are never mutated
 * downstream, so they are shared between readings.
 */
export class ParseCache {
  readonly #last = new Map<string, { text: string; parsed: { value: unknown; issues: readonly string[] } }>();
  /** Files parsed so far (tests: an unchanged file costs no parse). */
  parses = 0;

  parse<T>(file: string, text: string, fn: (text: string, file: string) => { value: T; issues: readonly string[] }): { value: T; issues: readonly string[] } {
    const hit = this.#last.get(file);
    if (hit !== undefined && hit.text === text) return hit.parsed as { value: T; issues: readonly string[] };
    const parsed = fn(text, file);
    this.parses++;
    this.#last.set(file, { text, parsed });
    return parsed;
  }
}

/**
 * Reads every file at once; `procRoot` is /proc, or /proc/<pid> for another namespace. With a
 * `cache` kept between calls, only files whose text changed are parsed.
 */
export async function readProc(procRoot = '/proc', cache = new ParseCache()): Promise<ProcReading> {
  const names = Object.keys(PROC_FILES) as ProcFile[];
  const failures: ReadFailure[] = [];
  const texts = new Map<ProcFile, { text: string; path: string }>();
  await Promise.all(
    names.map(async (name) => {
      const { path, optional } = PROC_FILES[name];
      const full = join(procRoot, path);
      try {
        texts.set(name, { text: readFileSync(full, 'utf8'), path: full });
      } catch (e) {
        if (!(optional && (e as NodeJS.ErrnoException).code === 'ENOENT')) failures.push({ what: full, error: e });
      }
    }),
  );
  failures.sort((a, b) => a.what.localeCompare(b.what));
  const issues: string[] = [];
  const parse = <T>(name: ProcFile, fn: (text: string, file: string) => { value: T; issues: readonly string[] }): T | undefined => {
    const t = texts.get(name);
    if (!t) return undefined;
    const r = cache.parse(t.path, t.text, fn);
    issues.push(...r.issues);
    return r.value;
  };
  const sections = new Map<string, ReadonlyMap<string, number>>();
  for (const name of ['netstat', 'snmp'] as const) for (const [k, v] of parse(name, parseSectionPairs) ?? []) sections.set(k, v);
  for (const [k, v] of snmp6Sections(parse('snmp6', parseNameValueLines) ?? new Map())) sections.set(k, v);
  const tcp = sockets(parse('tcp', parseSocketTable), parse('tcp6', parseSocketTable), texts.has('tcp'));
  const udp = sockets(parse('udp', parseSocketTable), parse('udp6', parseSocketTable), texts.has('udp'));
  return { rows: protocolRows({ sections, tcp, udp }), failures, issues };
}

/** IPv4 + IPv6 counts; nothing (no series) when the required IPv4 table could not be read. */
function sockets(v4: SocketCounts | undefined, v6: SocketCounts | undefined, haveV4: boolean): SocketCounts | undefined {
  if (!haveV4 || !v4) return undefined;
  return v6 ? addCounts(v4, v6) : v4;
}
