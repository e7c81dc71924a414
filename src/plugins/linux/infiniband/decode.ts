/**
 * Pure decoding for the infiniband plugin: sysfs values to numbers, samples to metric rows, read
 * failures to one status line. No I/O here, so every rule is tested without a filesystem.
 */
import type { Labels } from '../../../metrics/index.js';
import type { PartialReadError } from '../../../plugin/index.js';

/** One file of `/sys/class/infiniband/<device>/ports/<port>/counters/<name>`. */
export interface CounterSample {
  readonly device: string;
  readonly port: string;
  readonly name: string;
  readonly value: number;
}

/** One file of `/sys/class/net/<iface>/debug/<name>` for an `ib*` interface. */
export interface StatusSample {
  readonly iface: string;
  readonly name: string;
  readonly value: number;
}

/** A file or directory that could not be read or parsed: its path and why. */
export type ReadFailure = PartialReadError['failed'][number];

export type CounterLabels = 'statistic_name' | 'device' | 'port';
export type StatusLabels = 'statistic_name' | 'interface_name';

/** Retina reports status parameters only for interfaces whose name starts with this (IPoIB). */
export const INFINIBAND_INTERFACE_PREFIX = 'ib';

/** How many failed paths a degraded reason names before it says "and N more". */
export const MAX_NAMED_FAILURES = 5;

export function isInfinibandInterface(name: string): boolean {
  return name.startsWith(INFINIBAND_INTERFACE_PREFIX);
}

/** The value of a sysfs file is not what we expect (an unsigned decimal integer). */
export class SysfsValueError extends Error {
  override readonly name = 'SysfsValueError';
}

/**
 * Parses a sysfs counter: an unsigned decimal integer, surrounding whitespace (the trailing
 * newline) allowed. Values above 2^53 lose precision, as Retina's float64 gauges do.
 */
export function parseSysfsUint(text: string): number {
  const s = text.trim();
  const n = /^\d+$/.test(s) ? Number(s) : NaN;
  if (!Number.isFinite(n)) {
    const shown = s.length > 32 ? `${s.slice(0, 32)}…` : s;
    throw new SysfsValueError(`not an unsigned integer: ${JSON.stringify(shown)}`);
  }
  return n;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Rows for `infinibandCounterStats`, ordered by device, port, then name. */
export function counterRows(samples: readonly CounterSample[]): [Labels<CounterLabels>, number][] {
  return [...samples]
    .sort((a, b) => byText(a.device, b.device) || byText(a.port, b.port) || byText(a.name, b.name))
    .map((s) => [{ statistic_name: s.name, device: s.device, port: s.port }, s.value]);
}

/** Rows for `infinibandStatusParams`, ordered by interface, then name. */
export function statusRows(samples: readonly StatusSample[]): [Labels<StatusLabels>, number][] {
  return [...samples]
    .sort((a, b) => byText(a.iface, b.iface) || byText(a.name, b.name))
    .map((s) => [{ statistic_name: s.name, interface_name: s.iface }, s.value]);
}

/** The short form of an error: the errno code for fs errors (`ENOENT`), the message otherwise. */
export function failureCause(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}

/**
 * One line for `status.degraded`: names the first few failed paths in path order, so the same
 * failures give the same text on every tick (the manager logs only when the reason changes).
 */
export function describeFailures(failed: readonly ReadFailure[], max = MAX_NAMED_FAILURES): string {
  const sorted = [...failed].sort((a, b) => byText(a.what, b.what));
  const named = sorted.slice(0, max).map((f) => `${f.what} (${failureCause(f.error)})`);
  const more = sorted.length > max ? `, and ${sorted.length - max} more` : '';
  const noun = sorted.length === 1 ? 'entry' : 'entries';
  return `could not read ${sorted.length} InfiniBand sysfs ${noun}: ${named.join(', ')}${more}`;
}
