/**
 * Which clsact filters are ours, and removing the ones an earlier run of the agent left behind (a
 * SIGKILL or an OOM kill leaves clsact filters attached and running). Only filters of ours go: never
 * a filter of another kind, classic BPF, another chain, or a program with another name (a CNI's).
 * The rule is in README.md ("Which tc filters are ours").
 */
import { openLinkDumper } from './netlink.js';
import { detachTcFilter, listTcFilters, progNameById, type TcFilter, type TcParent } from './tc-filters.js';

/** The kernel keeps BPF_OBJ_NAME_LEN - 1 characters of a program's name. */
export const kernelProgName = (name: string): string => name.slice(0, 15);

/**
 * Whether `f` is a leftover of ours: a bpf filter on chain 0 whose program has one of `names` (kernel
 * names) and is not one of `keep` (the programs of this run). The name comes from the program
 * (TCA_BPF_ID); libbpf's TCA_BPF_NAME ("<program>:[<id>]") only when the program cannot be opened.
 */
export function isLeftover(f: TcFilter, names: ReadonlySet<string>, keep: ReadonlySet<number>, nameOf: (id: number) => string | undefined): boolean {
  if (f.kind !== 'bpf' || f.handle === 0 || f.chain !== 0 || f.progId === undefined || keep.has(f.progId)) return false;
  const name = nameOf(f.progId) ?? /^(.*):\[\d+\]$/.exec(f.bpfName ?? '')?.[1];
  return name !== undefined && names.has(name);
}

/** Removes the leftovers (isLeftover) on `direction` of `ifindex`; returns how many. */
export function removeLeftovers(ifindex: number, direction: TcParent, names: ReadonlySet<string>, keep: ReadonlySet<number>): number {
  let removed = 0;
  for (const f of listTcFilters(ifindex, direction)) {
    if (!isLeftover(f, names, keep, progNameById)) continue;
    detachTcFilter(ifindex, direction, f.handle, f.priority, `a leftover filter (program id ${f.progId})`);
    removed++;
  }
  return removed;
}

/**
 * At a plugin's start, before it attaches: removes the clsact leftovers of `programs` (our program
 * names) from both directions of every interface of this network namespace, also the ones this run
 * will not attach to (a host interface no longer configured, host programs at high aggregation).
 * Returns how many. Costs one link dump and two filter dumps per interface.
 */
export function removeTcLeftovers(programs: readonly string[]): number {
  const names = new Set(programs.map(kernelProgName));
  const keep = new Set<number>();
  const dumper = openLinkDumper();
  let removed = 0;
  try {
    for (const link of dumper.dump()) {
      for (const d of ['ingress', 'egress'] as const) removed += removeLeftovers(link.ifindex, d, names, keep);
    }
  } finally {
    dumper[Symbol.dispose]();
  }
  return removed;
}
