/**
 * Per-interface statistics: the kernel's counters of every interface (struct rtnl_link_stats64,
 * the same 24 values as the files under /sys/class/net/<if>/statistics/, with the same names), all
 * interfaces from one netlink link dump, plus the driver's ethtool stats whose names contain "err"
 * or "drop" (Retina's filter). `lo` and excluded names are skipped. Drivers without ethtool stats
 * (EOPNOTSUPP) are remembered per interface (name and ifindex) and not asked again until the
 * interface goes away and comes back.
 */
import { LINK_STAT_NAMES, errnos, type EthtoolClient, type EthtoolStats, type LinkInfo } from '../../../ffi/linux/index.js';
import type { Row } from './curated.js';
import type { ReadFailure } from './proc.js';

/** The ethtool side, as the plugin sees it (a real client, or none when libc is unavailable). */
export type EthtoolSource = Pick<EthtoolClient, 'stats' | 'forget'>;

/** Every interface of the node's network namespace with its counters (a netlink dump; tests: a list). */
export type LinkSource = () => readonly LinkInfo[];

export interface InterfaceReading {
  readonly rows: readonly Row[];
  readonly failures: readonly ReadFailure[];
  /** Interfaces read (not skipped). */
  readonly interfaces: readonly string[];
}

/** The statistics in name order (the order the rows come in), with their index in LINK_STAT_NAMES. */
const STATS_BY_NAME = LINK_STAT_NAMES.map((name, i) => [name, i] as const).sort((a, b) => (a[0] < b[0] ? -1 : 1));

/** Reads interfaces each tick; keeps the set of ethtool-less interfaces between ticks. */
export class InterfaceReader {
  readonly #unsupported = new Set<string>();
  /** Interfaces whose ethtool names the client may have cached. */
  readonly #cached = new Set<string>();
  readonly #exclude: readonly RegExp[];

  constructor(
    readonly links: LinkSource,
    exclude: readonly string[],
    readonly ethtool: EthtoolSource | undefined,
  ) {
    this.#exclude = exclude.map(globToRegExp);
  }

  read(): InterfaceReading {
    const failures: ReadFailure[] = [];
    let all: readonly LinkInfo[];
    try {
      all = this.links();
    } catch (e) {
      return { rows: [], failures: [{ what: 'netlink link dump (RTM_GETLINK)', error: e }], interfaces: [] };
    }
    const links = all.filter((l) => l.name !== 'lo' && !this.#exclude.some((r) => r.test(l.name))).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const seen = new Set<string>();
    const rows: Row[] = [];
    const read: string[] = [];
    for (const l of links) {
      if (!l.stats) {
        failures.push({ what: `netlink IFLA_STATS64 of ${l.name}`, error: new Error('the kernel sent no counters') });
        continue;
      }
      const key = `${l.name}#${l.ifindex}`;
      seen.add(key);
      read.push(l.name);
      for (const [stat, i] of STATS_BY_NAME) rows.push([{ interface_name: l.name, statistic_name: stat }, l.stats[i] as number]);
      this.#ethtoolRows(l.name, key, rows, failures);
    }
    // An interface that went away is asked again when it comes back, and its cached names go.
    for (const key of this.#unsupported) if (!seen.has(key)) this.#unsupported.delete(key);
    const present = new Set(read);
    for (const name of this.#cached) {
      if (present.has(name)) continue;
      this.#cached.delete(name);
      this.ethtool?.forget(name);
    }
    failures.sort((a, b) => a.what.localeCompare(b.what));
    return { rows, failures, interfaces: read };
  }

  #ethtoolRows(name: string, key: string, rows: Row[], failures: ReadFailure[]): void {
    if (!this.ethtool || this.#unsupported.has(key)) return;
    const r = this.ethtool.stats(name);
    this.#cached.add(name);
    if (r.ok) {
      for (const [stat, v] of ethtoolRows(r)) if (!(LINK_STAT_NAMES as readonly string[]).includes(stat)) rows.push([{ interface_name: name, statistic_name: stat }, v]);
    } else if (r.errno === errnos.EOPNOTSUPP) {
      this.#unsupported.add(key);
      this.ethtool.forget(name);
    } else if (r.errno === errnos.ENODEV) {
      this.ethtool.forget(name);
    } else {
      failures.push({ what: `ethtool ${r.op} ${name}`, error: new Error(r.code) });
    }
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

/** An interface pattern: a name, with `*` matching any run of characters (`lxc*`, `*-nic`). */
export function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}
