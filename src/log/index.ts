/**
 * Structured logging: winston JSON lines with `time`, `level`, `msg`, `component` (+ any fields).
 * What does not need winston (the Logger surface, errorFields, the stderr sinks, the line logger a
 * process uses before winston is loaded) is in ./line/index.ts, re-exported here.
 *
 * This folder sits on the bottom floor beside config and flow (it imports nothing of ours) because
 * every layer logs; the STYLE table has no row for it, so the reason is written here.
 */
import winston from 'winston';
import { LEVEL_RANK, errorFields, stderrStream, type LogFields, type Logger, type LoggerOptions } from './line/index.js';

export {
  BoundedQueueSink, DroppingFileSink, LOG_LEVELS, MAX_QUEUED_LOG_BYTES, createLineLogger, errorFields, formatLine, silentLogger, stderrStream,
  type LineLogger, type LogFields, type LogLevel, type Logger, type LoggerOptions,
} from './line/index.js';

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

export function createLogger(opts: LoggerOptions): Logger {
  const w = winston.createLogger({
    level: opts.level,
    levels: LEVEL_RANK,
    format: winston.format.combine(winston.format.timestamp({ alias: 'time' }), dropTimestamp(), shape(), winston.format.json()),
    transports: [new winston.transports.Stream({ stream: opts.stream ?? stderrStream() })],
  });
  // Not defaultMeta: winston applies it last, so a child could not override `component`.
  return new WinstonLogger(w.child({ component: opts.component ?? 'main' }));
}

// timestamp({alias}) writes both `timestamp` and `time`; keep only `time`.
const dropTimestamp = winston.format((info) => {
  delete (info as Record<string, unknown>)['timestamp'];
  return info;
});
