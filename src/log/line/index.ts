/**
 * Structured logging without winston: the Logger surface, the stderr sinks, and a line logger that
 * writes the lines winston's format writes (src/log/index.ts), for what runs before winston is
 * loaded. The agent serves /metrics before it loads winston (~25 ms of start-up CPU): its first
 * lines (`http server listening`, a signal) come from here, and once winston is there they go to it
 * (`handOff`). A sub-folder with its own index.ts, so that modules on that early path (config,
 * the command helpers, the plugin runner) import it without loading winston.
 */
import { fstatSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export type LogFields = Record<string, unknown>;

/** The narrow logging surface every component receives; no winston types leak past this file. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger whose lines all carry `fields` (e.g. `{ component: 'plugin', plugin: 'linuxutil' }`). */
  child(fields: LogFields): Logger;
}

/**
 * An Error as log fields: message, name, the stack (where it was thrown: what a bug report needs),
 * and its cause, recursively.
 */
export function errorFields(err: Error, depth = 0): Record<string, unknown> {
  const f: Record<string, unknown> = { message: err.message, name: err.name };
  if (err.stack !== undefined) f['stack'] = err.stack;
  // A cause chain can loop; a few levels say enough.
  if (err.cause instanceof Error) f['cause'] = depth < 4 ? errorFields(err.cause, depth + 1) : err.cause.message;
  else if (err.cause !== undefined) f['cause'] = String(err.cause);
  return f;
}

export interface LoggerOptions {
  level: LogLevel;
  /** Where lines go; stderr by default so stdout stays free for command output. */
  stream?: NodeJS.WritableStream;
  component?: string;
}

/**
 * Where log lines go by default. When stderr is a regular file (`2>>agent.log`), Node writes it with
 * a stream that emits an 'error' on a failed write (ENOSPC on a full disk, EIO, EFBIG): an uncaught
 * exception that would kill the agent for want of log space, and a destroyed stream that never logs
 * again. For a file this sink writes each line itself; a line that cannot be written is dropped and
 * counted, and the next line that can be written first says how many were lost and why. Pipes and
 * terminals keep Node's own stream (a full pipe queues the lines; it does not fail them), bounded by
 * BoundedQueueSink.
 */
export function stderrStream(fd = 2, fallback: NodeJS.WritableStream = process.stderr): NodeJS.WritableStream {
  let isFile = false;
  try {
    isFile = fstatSync(fd).isFile();
  } catch {
    isFile = false;
  }
  if (isFile) return new DroppingFileSink(fd);
  // A pipe whose reader has gone (EPIPE) fails every write with an 'error' event: without a
  // listener each one is an uncaught exception. The lines are lost (nobody is there to read them);
  // the agent is not.
  if (fallback.listenerCount('error') === 0) fallback.on('error', () => undefined);
  return new BoundedQueueSink(fallback as NodeJS.WritableStream & { readonly writableLength: number });
}

/** Bytes of log lines queued for a pipe that is not read before further lines are dropped. */
export const MAX_QUEUED_LOG_BYTES = 1 << 20;

/**
 * Writes to `target` (a pipe or terminal), unless more than `maxQueued` bytes already wait there: a
 * pipe nobody reads (a stuck log collector, a paused parent) otherwise queues every line in memory
 * for as long as the process runs. Lines beyond the bound are dropped and counted; the first line
 * written once the queue has drained says how many were lost.
 */
export class BoundedQueueSink extends Writable {
  #dropped = 0;
  constructor(readonly target: NodeJS.WritableStream & { readonly writableLength: number }, readonly maxQueued = MAX_QUEUED_LOG_BYTES) {
    super({ decodeStrings: true });
  }
  /** Lines dropped since the last one written. */
  get dropped(): number {
    return this.#dropped;
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    const queued = this.target.writableLength;
    if (queued > this.maxQueued) {
      this.#dropped++;
      return done();
    }
    if (this.#dropped > 0) {
      this.target.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'warn', msg: 'log lines dropped: the log could not be written', component: 'log', dropped: this.#dropped, reason: `stderr not read (more than ${this.maxQueued} bytes queued)` })}\n`);
      this.#dropped = 0;
    }
    this.target.write(chunk);
    done();
  }
}

/** Synchronous writes to `fd` that never fail the stream: what cannot be written is counted, not thrown. */
export class DroppingFileSink extends Writable {
  #dropped = 0;
  #reason = '';
  /** A failed write left part of a line: the next write starts a new line. */
  #partial = false;
  constructor(readonly fd: number) {
    super({ decodeStrings: true });
  }
  /** Lines dropped since the last successful write. */
  get dropped(): number {
    return this.#dropped;
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    if (this.#dropped > 0) {
      const note = `${this.#partial ? '\n' : ''}${JSON.stringify({ time: new Date().toISOString(), level: 'warn', msg: 'log lines dropped: the log could not be written', component: 'log', dropped: this.#dropped, reason: this.#reason })}\n`;
      if (!this.#writeAll(Buffer.from(note))) {
        this.#dropped++;
        return done();
      }
      this.#dropped = 0;
    }
    if (!this.#writeAll(chunk)) this.#dropped++;
    done();
  }
  #writeAll(b: Buffer): boolean {
    let off = 0;
    try {
      while (off < b.length) off += writeSync(this.fd, b, off, b.length - off);
      this.#partial = false;
      return true;
    } catch (e) {
      this.#reason = (e as NodeJS.ErrnoException).code ?? String(e);
      if (off > 0) this.#partial = true;
      return false;
    }
  }
}


/** The numeric levels, winston's too (src/log/index.ts): a line is written when its level is at most the logger's. */
export const LEVEL_RANK: Readonly<Record<LogLevel, number>> = { error: 0, warn: 1, info: 2, debug: 3 };

/** A logger whose lines go to another (winston's) from `handOff` on; until then it writes them itself. */
export interface LineLogger extends Logger {
  /** Where its lines go; give it to winston's logger so that both write through one sink. */
  readonly stream: NodeJS.WritableStream;
  /** From now on every line of this logger and of its children goes to `to` (and its children). */
  handOff(to: Logger): void;
}

/**
 * One JSON line as src/log/index.ts's winston format writes it: the caller's fields over the
 * logger's, `level`, `msg`, `time` (ISO), top-level Errors as errorFields, keys sorted at every depth
 * (logform's json format is safe-stable-stringify's, deterministic), bigints as strings.
 */
export function formatLine(level: LogLevel, msg: string, fields: LogFields, time = new Date()): string {
  const out: Record<string, unknown> = { ...fields, level, msg, time: time.toISOString() };
  for (const [k, v] of Object.entries(out)) if (v instanceof Error) out[k] = errorFields(v);
  const seen = new WeakSet<object>();
  return JSON.stringify(out, (_k, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (v === null || typeof v !== 'object') return v;
    if (seen.has(v)) return '[Circular]';
    seen.add(v);
    if (Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/**
 * A logger that writes formatLine's lines to `stream` (stderrStream() by default) at `level`, until
 * `handOff` gives it the logger to use from then on. For a process's first lines, before winston is
 * loaded: the lines read as winston's would.
 */
export function createLineLogger(opts: LoggerOptions): LineLogger {
  const stream = opts.stream ?? stderrStream();
  const rank = LEVEL_RANK[opts.level];
  let late: Logger | undefined;
  const make = (fields: LogFields, target: () => Logger | undefined): Logger => {
    const write = (level: LogLevel, msg: string, more?: LogFields): void => {
      const to = target();
      if (to) return to[level](msg, more);
      if (LEVEL_RANK[level] <= rank) stream.write(`${formatLine(level, msg, { ...fields, ...more })}\n`);
    };
    return {
      debug: (m, f) => write('debug', m, f),
      info: (m, f) => write('info', m, f),
      warn: (m, f) => write('warn', m, f),
      error: (m, f) => write('error', m, f),
      child(more) {
        // The late logger's own child, made once, when the first line after the hand-off comes.
        let mine: Logger | undefined;
        return make({ ...fields, ...more }, () => (mine ??= target()?.child(more)));
      },
    };
  };
  const root = make({ component: opts.component ?? 'main' }, () => late);
  return {
    ...root,
    stream,
    handOff(to) {
      late = to;
    },
  };
}

/** A logger that writes nothing, for unit tests. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};
