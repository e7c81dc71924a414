/**
 * Splits a byte stream into lines without ever holding more than `maxLineBytes` of one line: a watch
 * stream is one JSON object per line, and a line that grows past the cap fails with a ResponseTooLarge
 * error instead of growing memory without bound (node:readline has no such cap).
 */
import { ResponseTooLargeError } from './rest-errors.js';

const NL = 10;

/** Yields each non-empty line (without its `\n`, a trailing `\r` dropped); `onBytes` sees every chunk's size. */
export async function* splitLines(input: AsyncIterable<Buffer>, maxLineBytes: number, what: string, onBytes?: (n: number) => void): AsyncGenerator<string> {
  let parts: Buffer[] = [];
  let size = 0;
  const take = (last: Buffer): string => {
    const all = parts.length ? Buffer.concat([...parts, last], size + last.length) : last;
    parts = [];
    size = 0;
    const end = all.length && all[all.length - 1] === 13 ? all.length - 1 : all.length;
    return all.toString('utf8', 0, end);
  };
  for await (const chunk of input) {
    onBytes?.(chunk.length);
    let start = 0;
    for (let nl = chunk.indexOf(NL, start); nl >= 0; nl = chunk.indexOf(NL, start)) {
      if (size + nl - start > maxLineBytes) throw new ResponseTooLargeError(what, 'line', maxLineBytes);
      const line = take(chunk.subarray(start, nl));
      start = nl + 1;
      if (line.trim() !== '') yield line;
    }
    if (start < chunk.length) {
      size += chunk.length - start;
      if (size > maxLineBytes) throw new ResponseTooLargeError(what, 'line', maxLineBytes);
      parts.push(chunk.subarray(start));
    }
  }
  if (size > 0) {
    const line = take(Buffer.alloc(0));
    if (line.trim() !== '') yield line;
  }
}
