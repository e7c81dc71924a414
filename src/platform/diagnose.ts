/**
 * The OS seam of `retina-agent diagnose`: a report is a list of named sections, each collected under
 * its own time budget. A section that fails or runs out of time carries its error instead of data,
 * and the others still run. `src/platform/<os>/diagnose.ts` exports `osSections` (what only that OS
 * can say), loaded through select.ts; the command in src/cli adds the sections every OS shares.
 */
import type { PlatformInfo } from './capabilities.js';

/** One part of the report; `collect` only reads, it never changes the node. */
export interface DiagnoseSection {
  readonly name: string;
  collect(): unknown;
}

/** What a section gave: its data, or why not (`timedOut` when it ran out of its budget). */
export type SectionResult =
  | { readonly ok: true; readonly tookMs: number; readonly data: unknown }
  | { readonly ok: false; readonly tookMs: number; readonly error: string; readonly timedOut: boolean };

/** What an OS module of diagnose exports (`src/platform/<os>/diagnose.ts`). */
export interface OsDiagnoseModule {
  osSections(info: PlatformInfo): readonly DiagnoseSection[];
}

/**
 * Runs `section` with a budget of `timeoutMs`. Asynchronous work that overruns is abandoned (the
 * section says it timed out); a synchronous FFI call cannot be interrupted, so those are bounded by
 * what they walk (see ffi/linux/inventory.ts).
 */
export async function runSection(section: DiagnoseSection, timeoutMs: number): Promise<SectionResult> {
  const start = performance.now();
  const took = (): number => Math.round(performance.now() - start);
  try {
    const data = await beforeDeadline(Promise.resolve().then(() => section.collect()), timeoutMs);
    if (data === 'timeout') return { ok: false, tookMs: took(), error: `no answer within ${timeoutMs} ms`, timedOut: true };
    return { ok: true, tookMs: took(), data };
  } catch (e) {
    return { ok: false, tookMs: took(), error: e instanceof Error ? e.message : String(e), timedOut: false };
  }
}

/**
 * `work`'s result, or 'timeout' after `ms`. The timer keeps the process alive (unlike the agent's
 * `within`): a report must not end early because the work it waits for holds no handle of its own.
 */
export async function beforeDeadline<T>(work: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const budget = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), ms)));
  try {
    return await Promise.race([work, budget]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every section one after the other (so none competes with another's budget), keyed by name in order. */
export async function runSections(sections: readonly DiagnoseSection[], timeoutMs: number): Promise<Record<string, SectionResult>> {
  const out: Record<string, SectionResult> = {};
  for (const s of sections) out[s.name] = await runSection(s, timeoutMs);
  return out;
}
