/**
 * The connection table's evictions. The table is an LRU hash: when it is full, an insert takes the
 * place of the least recently used entry, with whatever counts that entry still held, and the
 * kernel says nothing. The programs count the entries they insert and the ones they delete at a
 * connection's close (retina_packetparser_ct_count, per CPU); the sweep deletes the expired and
 * counts the live. What is neither live nor deleted was evicted:
 *
 *   evicted = inserted - closed - expired - live
 *
 * `inserted` is read before the sweep and `closed` after it, so a connection that comes or goes
 * while the sweep walks the table can only make the difference smaller (the eviction is then found
 * at the next sweep), and the total only grows. It can be too large only if the walk misses an
 * entry that was there throughout, which takes the element next to it in its bucket deleted and
 * reused for another bucket in the instant the walk stands between them.
 */

/** struct pp_ct_count summed over the CPUs. */
export interface TableCounts {
  readonly inserted: number;
  readonly closed: number;
  /** Packets of new connections the table had no element for: not reported (counted as lost). */
  readonly untracked: number;
}

export interface EvictionTracker {
  /** After a sweep of the connections (not an aggregates-only flush): the evictions found since the previous step. */
  step(before: TableCounts, after: TableCounts, sweep: { readonly expired: number; readonly live: number }): number;
}

export function createEvictionTracker(): EvictionTracker {
  let expired = 0;
  let reported = 0;
  return {
    step(before, after, sweep) {
      expired += sweep.expired;
      const evicted = before.inserted - after.closed - expired - sweep.live;
      if (evicted <= reported) return 0;
      const n = evicted - reported;
      reported = evicted;
      return n;
    },
  };
}

/** struct pp_ct_count's u64 fields summed over the CPUs (PerCpuReader.sum), or zeros when unread. */
export const tableCounts = (v: readonly number[] | undefined): TableCounts => ({ inserted: v?.[0] ?? 0, closed: v?.[1] ?? 0, untracked: v?.[2] ?? 0 });
