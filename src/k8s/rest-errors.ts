/** Errors of the REST transport that callers branch on. */

/** A response body (a LIST page) or one watch line exceeded its cap; nothing of it was parsed. */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
  constructor(
    /** The request ("GET /api/v1/pods"). */
    readonly what: string,
    readonly part: 'body' | 'line',
    readonly limitBytes: number,
  ) {
    super(`${what}: ${part === 'body' ? 'response body' : 'one watch line'} exceeds the cap of ${limitBytes} bytes`);
  }
}
