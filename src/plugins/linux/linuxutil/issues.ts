/**
 * What a parser could not understand, each naming the file and line. Parsers keep what they can
 * read and record the rest here; the number of messages per file is capped so a garbage file
 * cannot flood memory or logs.
 */

const MAX_PER_FILE = 5;

export class Issues {
  readonly #messages: string[] = [];
  #dropped = 0;

  constructor(readonly file: string) {}

  /** Records a problem on 1-based `line` (0: the whole file). */
  add(line: number, what: string): void {
    if (this.#messages.length >= MAX_PER_FILE) {
      this.#dropped++;
      return;
    }
    this.#messages.push(line > 0 ? `${this.file} line ${line}: ${what}` : `${this.file}: ${what}`);
  }

  get count(): number {
    return this.#messages.length + this.#dropped;
  }

  list(): string[] {
    return this.#dropped ? [...this.#messages, `${this.file}: ${this.#dropped} more problem(s)`] : [...this.#messages];
  }
}

/** Splits a /proc text into lines without the final empty one. */
export function lines(text: string): string[] {
  const out = text.split('\n');
  if (out.length && out[out.length - 1] === '') out.pop();
  return out;
}

/**
 * A kernel counter as printed in /proc (decimal, possibly negative: Tcp MaxConn is -1). A number
 * of more than 308 digits (Infinity as a double) is not a counter.
 */
export function parseCounter(s: string): number | undefined {
  if (!/^-?\d+$/.test(s)) return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}
