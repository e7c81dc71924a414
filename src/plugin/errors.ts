/** Error classes by what the caller can do about them. Anything else is retryable. */

/** Retrying cannot help (a missing kernel hook, an unsupported OS feature): wait for a config change. */
export class PermanentError extends Error {
  override readonly name = 'PermanentError';
}

/** Some of the data could not be read, the rest is good (one /proc file, one interface). */
export class PartialReadError extends Error {
  override readonly name = 'PartialReadError';
  constructor(readonly failed: readonly { what: string; error: unknown }[]) {
    super(`could not read ${failed.map((f) => `${f.what} (${errMessage(f.error)})`).join(', ')}`);
  }
}

export function errMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** System errors that say "not now" rather than "never": out of memory, busy, try again. */
export const RETRYABLE_ERRNOS: ReadonlySet<string> = new Set(['EAGAIN', 'ENOMEM', 'EBUSY']);

/** The retryable errno (`code`, as Node's system errors and our FFI errors carry it) in `e` or its causes. */
export function retryableErrno(e: unknown): string | undefined {
  for (let x = e, depth = 0; x instanceof Error && depth < 8; x = x.cause, depth++) {
    const code = (x as { code?: unknown }).code;
    if (typeof code === 'string' && RETRYABLE_ERRNOS.has(code)) return code;
  }
  return undefined;
}

/**
 * Whether retrying cannot help: a PermanentError (a missing hook), unless what it wraps is a
 * transient system error (EAGAIN, ENOMEM, EBUSY), which is retried like any other error.
 */
export function isPermanent(e: unknown): boolean {
  return e instanceof PermanentError && retryableErrno(e) === undefined;
}
