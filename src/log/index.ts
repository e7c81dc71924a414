/**
 * Structured logging: winston JSON lines with `time`, `level`, `msg`, `component` (+ any fields).
 *
 * This folder sits on the bottom floor beside config and flow (it imports nothing of ours) because
 * every layer logs; the STYLE table has no row for it, so the reason is written here.
 */
import { fstatSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';
import winston from 'winston';

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

/** Renames winston's `message` to `msg` and `timestamp` to `time`, and flattens Errors. */
const shape = winston.format((info) => {
  const out = info as Record<string | symbol, unknown>;
  out['msg'] = out['message'];
  delete out['message'];
  for (const [k, v] of Object.entries(out)) {
    if (v instanceof Error) out[k] = errorFields(v);
  }
  return info;
});

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

class WinstonLogger implements Logger {
  readonly #w: winston.Logger;
  constructor(w: winston.Logger) {
    this.#w = w;
  }
  debug(msg: string, fields?: LogFields): void {
    this.#w.debug(msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.#w.info(msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.#w.warn(msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.#w.error(msg, fields);
  }
  child(fields: LogFields): Logger {
    return new WinstonLogger(this.#w.child(fields));
  }
}

export interface LoggerOptions {
  level: LogLevel;
  /** Where lines go; stderr by default so stdout stays free for command output. */
  stream?: NodeJS.WritableStream;
  component?: string;
}

export function createLogger(opts: LoggerOptions): Logger {
  const w = winston.createLogger({
    level: opts.level,
    levels: { error: 0, warn: 1, info: 2, debug: 3 },
    format: winston.format.combine(winston.format.timestamp({ alias: 'time' }), dropTimestamp(), shape(), winston.format.json()),
    transports: [new winston.transports.Stream({ stream: opts.stream ?? stderrStream() })],
  });
  // Not defaultMeta: winston applies it last, so a child could not override `component`.
  return new WinstonLogger(w.child({ component: opts.component ?? 'main' }));
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

// timestamp({alias}) writes both `timestamp` and `time`; keep only `time`.
const dropTimestamp = winston.format((info) => {
  delete (info as Record<string, unknown>)['timestamp'];
  return info;
});

/** A logger that writes nothing, for unit tests. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};
