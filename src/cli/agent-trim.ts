/**
 * What the agent does so that its memory goes back to the system once it is no longer used: the C
 * heap trimmed after a scrape, and the read-only file pages dropped after start-up (agent.ts wires
 * both; bench/agent/README.md has the measurements).
 */
import { errorFields, type Logger } from '../log/line/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import type { Platform } from '../platform/index.js';

/** At most one C-heap trim per this many ms, done after a scrape's response is written. */
export const HEAP_TRIM_EVERY_MS = 10_000;

/**
 * The /metrics body, and once its response is written (and HEAP_TRIM_EVERY_MS passed since the last
 * time) the C heap trimmed: a scraped agent's freed native buffers otherwise stayed resident (about
 * 3 MB of anonymous RSS, bench/agent/README.md). After a scrape, so an idle agent wakes for nothing more.
 */
export function exposeAndTrim(metrics: MetricsRegistry, release: (() => void) | undefined): () => ReturnType<MetricsRegistry['exposeBody']> {
  if (!release) return () => metrics.exposeBody();
  let last = -Infinity;
  return async () => {
    const b = await metrics.exposeBody();
    return {
      contentType: b.contentType, body: b.body,
      release() {
        b.release();
        const now = performance.now();
        if (now - last < HEAP_TRIM_EVERY_MS) return;
        last = now;
        release();
      },
    };
  };
}

/** Read-only file pages (binary, libraries) dropped this long after the plugins started, then every COLD_PAGES_EVERY_MS. */
export const COLD_PAGES_FIRST_MS = 20_000;
export const COLD_PAGES_EVERY_MS = 30 * 60_000;

/**
 * Drops the resident pages of read-only file mappings once start-up is over, and again now and then
 * (platform.releaseColdPages: Linux's madvise, src/ffi/linux/memory.ts). Start-up reads much of the
 * node binary once (its snapshot, builtin sources, symbol tables for each dlopen); those pages stayed
 * in the RSS for the agent's life. Pages in use come back at their next touch, from the page cache.
 * The timer is unref'd: it never keeps the process up, and an idle agent wakes for it twice an hour.
 */
export function releaseColdPagesLater(release: Platform['releaseColdPages'], log: Logger,
  firstMs = COLD_PAGES_FIRST_MS, everyMs = COLD_PAGES_EVERY_MS): Disposable {
  if (!release) return { [Symbol.dispose]: () => undefined };
  let first = true;
  let timer: NodeJS.Timeout;
  const run = (): void => {
    try {
      const r = release();
      const fields = { mappings: r.mappings, releasedMB: Number((r.bytes / 2 ** 20).toFixed(1)), ...(r.refused ? { refused: r.refused } : {}) };
      if (first) log.info('read-only file pages released (they come back on use)', fields);
      else log.debug('read-only file pages released (they come back on use)', fields);
    } catch (e) {
      log.warn('cannot release read-only file pages; not tried again', { error: errorFields(e as Error) });
      return;
    }
    first = false;
    timer = setTimeout(run, everyMs);
    timer.unref();
  };
  timer = setTimeout(run, firstMs);
  timer.unref();
  return { [Symbol.dispose]: () => clearTimeout(timer) };
}
