/**
 * Pure parsers for the kernel's protocol counter files:
 * - /proc/net/netstat and /proc/net/snmp: pairs of lines, `Section: Name1 Name2 …` then
 *   `Section: v1 v2 …` (TcpExt, IpExt, MPTcpExt / Ip, Icmp, Tcp, Udp, …);
 * - /proc/net/snmp6: one `Name value` per line (Ip6InReceives 12).
 */
import { Issues, lines, parseCounter } from './issues.js';

/** Section → counter name → value. Unknown sections are kept; callers pick what they need. */
export type Sections = ReadonlyMap<string, ReadonlyMap<string, number>>;

export interface Parsed<T> {
  readonly value: T;
  readonly issues: readonly string[];
}

const SECTION = /^([A-Za-z][A-Za-z0-9]*):(.*)$/;

/** Parses a header/values pair file. Bad pairs are skipped and reported; the rest is kept. */
export function parseSectionPairs(text: string, file: string): Parsed<Sections> {
  const issues = new Issues(file);
  const out = new Map<string, Map<string, number>>();
  const ls = lines(text);
  if (ls.length === 0) issues.add(0, 'empty file');
  let i = 0;
  while (i < ls.length) {
    const header = SECTION.exec(ls[i] as string);
    if (!header) {
      if ((ls[i] as string).trim() !== '') issues.add(i + 1, `expected "Section: names…", got ${quote(ls[i] as string)}`);
      i++;
      continue;
    }
    const name = header[1] as string;
    if (isValues(header[2] as string)) {
      issues.add(i + 1, `"${name}:" values without a header line`);
      i++;
      continue;
    }
    const next = i + 1 < ls.length ? SECTION.exec(ls[i + 1] as string) : null;
    if (!next || !isValues(next[2] as string)) {
      issues.add(i + 1, `"${name}:" header has no values line`);
      i++;
      continue;
    }
    if (next[1] !== name) {
      issues.add(i + 2, `"${name}:" header is followed by "${next[1] as string}:" values`);
      i++;
      continue;
    }
    const keys = fields(header[2] as string);
    const values = fields(next[2] as string);
    i += 2;
    if (keys.length !== values.length) {
      issues.add(i, `"${name}:" has ${keys.length} names but ${values.length} values`);
      continue;
    }
    if (out.has(name)) issues.add(i - 1, `"${name}:" appears twice; the later one is kept`);
    const section = new Map<string, number>();
    keys.forEach((k, j) => {
      const v = parseCounter(values[j] as string);
      if (v === undefined) issues.add(i, `"${name}: ${k}" is not a number: ${quote(values[j] as string)}`);
      else section.set(k, v);
    });
    out.set(name, section);
  }
  return { value: out, issues: issues.list() };
}

/** Parses /proc/net/snmp6 into one section per prefix-free file: name → value. */
export function parseNameValueLines(text: string, file: string): Parsed<ReadonlyMap<string, number>> {
  const issues = new Issues(file);
  const out = new Map<string, number>();
  const ls = lines(text);
  if (ls.length === 0) issues.add(0, 'empty file');
  ls.forEach((line, j) => {
    const f = fields(line);
    if (f.length === 0) return;
    const v = f.length === 2 ? parseCounter(f[1] as string) : undefined;
    if (v === undefined || !/^[A-Za-z][A-Za-z0-9_]*$/.test(f[0] as string)) issues.add(j + 1, `expected "Name value", got ${quote(line)}`);
    else out.set(f[0] as string, v);
  });
  return { value: out, issues: issues.list() };
}

/** A values line starts with a number (a names line with a name); an empty section is neither. */
function isValues(rest: string): boolean {
  return /^-?\d+$/.test(fields(rest)[0] ?? '');
}

function fields(s: string): string[] {
  const t = s.trim();
  return t === '' ? [] : t.split(/\s+/);
}

export function quote(s: string): string {
  return JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);
}
