/** The lines a child process writes on a stream, taken one at a time and in order. */
import { createInterface } from 'node:readline';

export class LineQueue {
  readonly #lines: string[] = [];
  readonly #waiters: ((line: string) => void)[] = [];
  constructor(stream: NodeJS.ReadableStream) {
    createInterface({ input: stream }).on('line', (line) => {
      const w = this.#waiters.shift();
      if (w) w(line);
      else this.#lines.push(line);
    });
  }
  /** The next line, once it comes; rejects with `timeout()` after `timeoutMs` (the line then goes to the next caller). */
  next(timeoutMs: number, timeout: () => Error): Promise<string> {
    const l = this.#lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    return new Promise((resolve, reject) => {
      const waiter = (line: string): void => {
        clearTimeout(t);
        resolve(line);
      };
      const t = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(timeout());
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }
}
