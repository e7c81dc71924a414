/**
 * Per-interface statistics: every counter under /sys/class/net/<if>/statistics/ plus the driver's
 * ethtool stats whose names contain "err" or "drop" (Retina's filter). `lo` and excluded names are
 * skipped. Drivers without ethtool stats (EOPNOTSUPP) are remembered per interface (name and
 * ifindex) and not asked again until the interface goes away and comes back.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { EthtoolClient, EthtoolStats } from '../../../ffi/linux/ethtool.js';
import { errnos } from '../../../ffi/linux/libc.js';
import type { Row } from './curated.js';
import type { ReadFailure } from './proc.js';
import { parseCounter } from './issues.js';

/** The ethtool side, as the plugin sees it (a real client, or none when libc is unavailable). */
export type EthtoolSource = Pick<EthtoolClient, 'stats' | 'forget'>;

export interface InterfaceReading {
  readonly rows: readonly Row[];
  readonly failures: readonly ReadFailure[];
  /** Interfaces read (not skipped). */
  readonly interfaces: readonly string[];
}

/** Reads interfaces each tick; keeps the set of ethtool-less interfaces between ticks. */
export class InterfaceReader {
  readonly #unsupported = new Set<string>();
  /** Interfaces whose ethtool names the client may have cached. */
  readonly #cached = new Set<string>();
  readonly #exclude: readonly RegExp[];

  constructor(
    readonly sysClassNet: string,
    exclude: readonly string[],
    readonly ethtool: EthtoolSource | undefined,
  ) {
    this.#exclude = exclude.map(globToRegExp);
  }

  async read(): Promise<InterfaceReading> {
    const failures: ReadFailure[] = [];
    let names: string[];
    try {
      names = (await readdir(this.sysClassNet)).sort();
    } catch (e) {
      return { rows: [], failures: [{ what: this.sysClassNet, error: e }], interfaces: [] };
    }
    names = names.filter((n) => n !== 'lo' && !this.#exclude.some((r) => r.test(n)));
    const per = await Promise.all(names.map((n) => this.#one(n, failures)));
    const seen = new Set<string>();
    const rows: Row[] = [];
    const read: string[] = [];
    per.forEach((r, i) => {
      if (!r) return;
      const name = names[i] as string;
      read.push(name);
      seen.add(r.key);
      rows.push(...r.rows);
    });
    // An interface that went away is asked again when it comes back, and its cached names go.
    for (const key of this.#unsupported) if (!seen.has(key)) this.#unsupported.delete(key);
    for (const name of this.#cached) {
      if (read.includes(name)) continue;
      this.#cached.delete(name);
      this.ethtool?.forget(name);
    }
    failures.sort((a, b) => a.what.localeCompare(b.what));
    return { rows, failures, interfaces: read };
  }

  /** Undefined when the entry is not an interface or vanished while being read. */
  async #one(name: string, failures: ReadFailure[]): Promise<{ key: string; rows: Row[] } | undefined> {
    const dir = join(this.sysClassNet, name);
    const stats = await readStatistics(join(dir, 'statistics'), failures);
    if (!stats) return undefined;
    const ifindex = (await readFile(join(dir, 'ifindex'), 'utf8').catch(() => '')).trim();
    const key = `${name}#${ifindex}`;
    const rows: Row[] = stats.map(([stat, v]) => [{ interface_name: name, statistic_name: stat }, v] as const);
    if (this.ethtool && !this.#unsupported.has(key)) {
      const r = this.ethtool.stats(name);
      this.#cached.add(name);
      if (r.ok) {
        const have = new Set(stats.map(([s]) => s));
        for (const [stat, v] of ethtoolRows(r)) if (!have.has(stat)) rows.push([{ interface_name: name, statistic_name: stat }, v]);
      } else if (r.errno === errnos.EOPNOTSUPP) {
        this.#unsupported.add(key);
        this.ethtool.forget(name);
      } else if (r.errno === errnos.ENODEV) {
        this.ethtool.forget(name);
      } else {
        failures.push({ what: `ethtool ${r.op} ${name}`, error: new Error(r.code) });
      }
    }
    return { key, rows };
  }
}

/** The ethtool stats Retina keeps (name contains "err" or "drop"); repeated names are summed. */
export function ethtoolRows(r: Extract<EthtoolStats, { ok: true }>): [string, number][] {
  const out = new Map<string, number>();
  for (const [name, v] of r.stats) {
    const lower = name.toLowerCase();
    if (lower.includes('err') || lower.includes('drop')) out.set(name, (out.get(name) ?? 0) + v);
  }
  return [...out];
}

/**
 * Errors of a statistics file whose interface is going away: the file is gone, or the kernel's
 * netstat_show answers EINVAL once the device is no longer registered (dev_isalive). The interface
 * then has no series this tick, as if it had gone a moment earlier.
 */
const VANISHED = new Set(['ENOENT', 'ENODEV', 'EINVAL']);

/** `[name, value]` for each file of a statistics/ directory; undefined if the interface is gone. */
async function readStatistics(dir: string, failures: ReadFailure[]): Promise<[string, number][] | undefined> {
  let files: string[];
  try {
    files = (await readdir(dir)).sort();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined; // bonding_masters, or the interface went away
    failures.push({ what: dir, error: e });
    return undefined;
  }
  const out: [string, number][] = [];
  let gone = false;
  await Promise.all(
    files.map(async (f) => {
      const path = join(dir, f);
      try {
        const text = (await readFile(path, 'utf8')).trim();
        const v = parseCounter(text);
        if (v === undefined) failures.push({ what: path, error: new Error(`not a number: ${JSON.stringify(text.slice(0, 40))}`) });
        else out.push([f, v]);
      } catch (e) {
        if (VANISHED.has((e as NodeJS.ErrnoException).code ?? '')) gone = true;
        else failures.push({ what: path, error: e });
      }
    }),
  );
  if (gone) return undefined;
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** An interface pattern: a name, with `*` matching any run of characters (`lxc*`, `*-nic`). */
export function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}
