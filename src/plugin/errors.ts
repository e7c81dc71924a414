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
