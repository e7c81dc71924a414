/**
 * interface_stats, in one of three shapes (interfaceStatsMode):
 * - all_interfaces (default, Retina's): the driver's ethtool stats whose names contain "err" or
 *   "drop", summed over every interface whose name contains none of lo, cbr0, lxc, azv, as one
 *   series per statistic labelled interface_name="all_interfaces", sums of 0 left out (as Retina):
 *   as many series on a node with 100 pods as with none;
 * - per_interface: per interface, the kernel's counters (struct rtnl_link_stats64, the same 24
 *   values as the files under /sys/class/net/<if>/statistics/, with the same names) plus those
 *   ethtool stats, veths (IFLA_INFO_KIND veth: pod interfaces) and lo left out;
 * - per_interface_with_veths: the same with veths.
 * All interfaces come from one netlink link dump; interfaceStatsExclude names are skipped in every
 * shape. Drivers without ethtool stats (EOPNOTSUPP) are remembered per interface (name and ifindex)
 * and not asked again until the interface goes away and comes back.
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

export const INTERFACE_STATS_MODES = ['all_interfaces', 'per_interface', 'per_interface_with_veths'] as const;
export type InterfaceStatsMode = (typeof INTERFACE_STATS_MODES)[number];

/** Retina's interface_name of the summed shape (pkg/utils InterfaceNameConstant). */
export const ALL_INTERFACES = 'all_interfaces';

/** Retina's summed shape skips interfaces whose name contains one of these (ethtool_stats_linux.go). */
const RETINA_SKIPPED = ['lo', 'cbr0', 'lxc', 'azv'];
export const retinaSkips = (name: string): boolean => RETINA_SKIPPED.some((p) => name.includes(p));

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
    readonly mode: InterfaceStatsMode = 'all_interfaces',
  ) {
    this.#exclude = exclude.map(globToRegExp);
  }

  #skips(l: LinkInfo): boolean {
    if (this.#exclude.some((r) => r.test(l.name))) return true;
    if (this.mode === 'all_interfaces') return retinaSkips(l.name);
    return l.name === 'lo' || (this.mode === 'per_interface' && l.kind === 'veth');
  }

  read(): InterfaceReading {
    const failures: ReadFailure[] = [];
    let all: readonly LinkInfo[];
    try {
      all = this.links();
    } catch (e) {
      return { rows: [], failures: [{ what: 'netlink link dump (RTM_GETLINK)', error: e }], interfaces: [] };
    }
    const links = all.filter((l) => !this.#skips(l)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const seen = new Set<string>();
    const rows: Row[] = [];
    const read: string[] = [];
    const summed = this.mode === 'all_interfaces' ? new Map<string, number>() : undefined;
    for (const l of links) {
      const key = `${l.name}#${l.ifindex}`;
      if (summed) {
        seen.add(key);
        read.push(l.name);
        for (const [stat, v] of this.#ethtoolStats(l.name, key, failures)) summed.set(stat, (summed.get(stat) ?? 0) + v);
        continue;
      }
      if (!l.stats) {
        failures.push({ what: `netlink IFLA_STATS64 of ${l.name}`, error: new Error('the kernel sent no counters') });
        continue;
      }
      seen.add(key);
      read.push(l.name);
      for (const [stat, i] of STATS_BY_NAME) rows.push([{ interface_name: l.name, statistic_name: stat }, l.stats[i] as number]);
      // A driver's stat named as a kernel counter: the kernel's value is kept.
      for (const [stat, v] of this.#ethtoolStats(l.name, key, failures)) if (!(LINK_STAT_NAMES as readonly string[]).includes(stat)) rows.push([{ interface_name: l.name, statistic_name: stat }, v]);
    }
    // Non-zero sums only, as Retina (addZeroVal false): a NIC driver lists dozens of per-queue
    // err/drop counters that stay 0, and each would be a series.
    if (summed) {
      for (const stat of [...summed.keys()].sort()) {
        const v = summed.get(stat) as number;
        if (v !== 0) rows.push([{ interface_name: ALL_INTERFACES, statistic_name: stat }, v]);
      }
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

  /** The interface's ethtool err/drop stats ([] without ethtool, for a driver without stats, or on failure). */
  #ethtoolStats(name: string, key: string, failures: ReadFailure[]): [string, number][] {
    if (!this.ethtool || this.#unsupported.has(key)) return [];
    const r = this.ethtool.stats(name);
    this.#cached.add(name);
    if (r.ok) return ethtoolRows(r);
    if (r.errno === errnos.EOPNOTSUPP) {
      this.#unsupported.add(key);
      this.ethtool.forget(name);
    } else if (r.errno === errnos.ENODEV) {
      this.ethtool.forget(name);
    } else {
      failures.push({ what: `ethtool ${r.op} ${name}`, error: new Error(r.code) });
    }
    return [];
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
