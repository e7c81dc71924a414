/**
 * A full garbage collection now and then when an agent's old space has grown and V8 has not
 * collected it (issue 27). A scraped idle agent promotes about 1 MB an hour of what its scrapes and
 * intervals leave (bench/agent/README.md, 130 minutes scraped every 15 s: anonymous RSS 21.0 → 23.1 MB,
 * V8's old space 9.3 → 11.55 MB), and V8 starts its next mark-compact only when the old space is at
 * least 8 MB above what survived the last one: its memory reducer collects after start-up and then
 * waits for that limit, hours away at that rate. The RSS was a saw-tooth of hours and megabytes.
 * Here the old space is looked at every HEAP_CHECK_EVERY_MS (an unref'd timer: an idle agent wakes
 * six times an hour more) and collected once it has grown HEAP_GROWTH_BYTES since the last
 * collection (a memory-reducing collection of an idle agent's heap: 20-35 ms, about once an hour).
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { errorFields, type Logger } from '../log/line/index.js';

export const HEAP_CHECK_EVERY_MS = 10 * 60_000;
export const HEAP_GROWTH_BYTES = 1 << 20;

const oldSpace = (): { space_used_size: number; space_size: number } | undefined => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
/** Bytes in use in V8's old space (live objects and garbage not yet collected). */
export const oldSpaceUsed = (): number => oldSpace()?.space_used_size ?? 0;
/** Bytes V8 holds for its old space (its pages, used or not). */
export const oldSpaceCommitted = (): number => oldSpace()?.space_size ?? 0;

let fullGc: (() => void) | undefined;
/**
 * V8's full collection in its memory-reducing flavour, `gc({ type: 'major', flavor: 'last-resort' })`:
 * it also compacts the old space and gives its emptied pages back (a plain `gc()` frees the objects but
 * keeps the pages committed: 33 MB of garbage freed left 34.3 MB committed; this flavour left 6.05). The
 * function is the global when node runs with --expose-gc, else the flag is set now and the function
 * taken from a new context (V8 installs it in contexts created while the flag is on; Jest's leak
 * detector does the same). Changing a flag at run time only means that built-in modules loaded later
 * are compiled without node's code cache; by then the agent has loaded them all.
 */
export function collector(): () => void {
  if (fullGc) return fullGc;
  let g = (globalThis as { gc?: unknown }).gc;
  if (typeof g !== 'function') {
    setFlagsFromString('--expose-gc');
    g = runInNewContext('gc') as unknown;
    if (typeof g !== 'function') throw new Error('V8 gave no gc function with --expose-gc');
  }
  const gc = g as (opts: { type: string; flavor: string }) => void;
  return (fullGc = () => gc({ type: 'major', flavor: 'last-resort' }));
}

export interface CompactionOptions {
  readonly everyMs?: number;
  readonly growthBytes?: number;
  /** The old space's size in use (tests give their own). */
  readonly used?: () => number;
  /** A full collection (tests give their own). */
  readonly collect?: () => void;
}

/**
 * Checks the old space every `everyMs` and collects in full when it has grown `growthBytes` since
 * the last time it was found collected (by this or by V8 itself: a smaller size than before).
 */
export function compactHeapWhenGrown(log: Logger, opts: CompactionOptions = {}): Disposable {
  const { everyMs = HEAP_CHECK_EVERY_MS, growthBytes = HEAP_GROWTH_BYTES, used = oldSpaceUsed } = opts;
  const collect = opts.collect ?? ((): void => collector()());
  let base = used();
  let timer: NodeJS.Timeout | undefined;
  const check = (): void => {
    const before = used();
    if (before - base >= growthBytes) {
      try {
        const t0 = performance.now();
        collect();
        base = used();
        log.debug('old space collected', { beforeMB: mb(before), afterMB: mb(base), committedMB: mb(oldSpaceCommitted()), ms: Number((performance.now() - t0).toFixed(1)) });
      } catch (e) {
        log.warn('cannot collect the heap; not tried again', { error: errorFields(e as Error) });
        return;
      }
    } else {
      base = Math.min(base, before);
    }
    timer = setTimeout(check, everyMs).unref();
  };
  timer = setTimeout(check, everyMs).unref();
  return { [Symbol.dispose]: () => clearTimeout(timer) };
}

const mb = (b: number): number => Number((b / 2 ** 20).toFixed(2));
