/**
 * The OTLP flow-log sink: a bounded queue of records, sent in batches by one sender loop (one
 * request in flight, so records arrive in order), retried with backoff.
 *
 * - `write` only appends to the queue: it never waits on the network and never throws. What does
 *   not fit (the queue plus the batch in flight hold at most `queueSize` records) is counted
 *   dropped{reason="queue_full"}.
 * - A batch goes out when `batchSize` records are queued or the oldest has waited `flushIntervalMs`.
 * - A retryable failure (collector down, throttling) keeps the batch and retries after the
 *   collector's Retry-After / RetryInfo delay, or the backoff (src/config/backoff.ts); a batch that
 *   has not got through in `maxElapsedMs` is dropped{reason="retries_exhausted"}, as OpenTelemetry
 *   exporters give up after their max_elapsed_time. A refused batch is dropped{reason="rejected"},
 *   and so are the records a partial success names.
 * - Disposing it (`[Symbol.asyncDispose]`) sends what it can within `closeTimeoutMs`; the rest is
 *   dropped{reason="closed"}. Its deadline binds the batch in flight too: a retry wait ends, and a
 *   request the collector has not answered by then (down, or accepting and silent) is given up and
 *   its batch dropped{closed}, so disposal resolves in about `closeTimeoutMs` with every record counted. (Such a batch may still
 *   reach a collector that was only slow; it is counted dropped, the sink cannot know.)
 * Every record handed to `write` ends as exactly one written or one dropped count, all of them by
 * the time disposal resolves.
 */
import { Backoff, type BackoffOptions } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { SinkCounts } from '../counts.js';
import { recordsJson } from '../records-json.js';
import type { FlowLogSink } from '../types.js';
import { msToUnixNano, toLogRecord, type OtlpLogRecord } from './encode.js';
import type { SendResult, Transport } from './transport.js';

export interface OtlpSinkOptions {
  readonly transport: Transport;
  readonly counts: SinkCounts;
  readonly log: Logger;
  readonly queueSize: number;
  readonly batchSize: number;
  readonly flushIntervalMs: number;
  readonly backoff?: BackoffOptions;
  /** A batch is dropped when it has not got through in this long (default 5 min). */
  readonly maxElapsedMs?: number;
  /** Longest Retry-After honoured (default 5 min). */
  readonly maxRetryAfterMs?: number;
  /** How long disposal may still send (default 5 s). */
  readonly closeTimeoutMs?: number;
  readonly now?: () => number;
}

export interface OtlpSink extends FlowLogSink {
  /** Records held (queued and in flight), for tests and diagnostics. */
  readonly pending: number;
  /** Resolves when the queue is empty and nothing is in flight (tests, benches). */
  idle(): Promise<void>;
}

const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000, jitter: 0.2 };

export function createOtlpSink(o: OtlpSinkOptions): OtlpSink {
  const now = o.now ?? Date.now;
  const backoff = new Backoff(o.backoff ?? DEFAULT_BACKOFF);
  const maxElapsedMs = o.maxElapsedMs ?? 300_000;
  const maxRetryAfterMs = o.maxRetryAfterMs ?? 300_000;
  // The queue: converted records (time taken when written), a head index so shift is O(1).
  let queue: OtlpLogRecord[] = [];
  let head = 0;
  let inFlight = 0;
  let sending = false;
  let closed = false;
  let flushTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryWake: (() => void) | undefined;
  let idleWaiters: Array<() => void> = [];
  let lastErrorLog = 0;
  // Set by disposal: when sending stops, and a promise that settles then (a send still waiting loses the race).
  let closeDeadline = Number.POSITIVE_INFINITY;
  let closeTimer: NodeJS.Timeout | undefined;
  let giveUp: (r: SendResult) => void = () => undefined;
  const abandon = new Promise<SendResult>((resolve) => (giveUp = resolve));
  const pastClose = (): boolean => closed && now() >= closeDeadline;

  const queued = (): number => queue.length - head;

  const warn = (msg: string, extra: Record<string, unknown>): void => {
    // One line per 10 s at most: a collector down for an hour must not flood the log.
    const t = now();
    if (t - lastErrorLog < 10_000) return;
    lastErrorLog = t;
    o.log.warn(msg, extra);
  };

  const settleIdle = (): void => {
    if (queued() === 0 && inFlight === 0 && !sending) {
      const w = idleWaiters;
      idleWaiters = [];
      for (const f of w) f();
    }
  };

  const take = (): OtlpLogRecord[] => {
    const n = Math.min(o.batchSize, queued());
    const batch = queue.slice(head, head + n);
    head += n;
    if (head > 4096 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
    return batch;
  };

  const wakeRetry = (): void => {
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = undefined;
    const w = retryWake;
    retryWake = undefined;
    w?.();
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      retryWake = resolve;
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        retryWake = undefined;
        resolve();
      }, ms);
    });

  /** Sends one batch until it is through, refused, or out of time. */
  const deliver = async (batch: OtlpLogRecord[], deadline: number): Promise<void> => {
    const started = now();
    for (;;) {
      if (pastClose()) {
        o.counts.dropped('closed', batch.length);
        return;
      }
      let r: SendResult;
      try {
        const sent = o.transport.send(batch);
        r = await Promise.race([sent, abandon]);
      } catch (e) {
        r = { kind: 'retry', message: (e as Error).message };
      }
      if (r.kind === 'retry' && pastClose()) {
        o.counts.dropped('closed', batch.length);
        warn('OTLP flow-log batch dropped at close', { records: batch.length, error: r.message });
        return;
      }
      if (r.kind === 'ok') {
        backoff.reset();
        const rejected = Math.min(batch.length, Math.max(0, r.rejected));
        o.counts.written(batch.length - rejected);
        o.counts.dropped('rejected', rejected);
        if (rejected > 0) warn('OTLP collector rejected part of a flow-log batch', { rejected, message: r.message });
        return;
      }
      if (r.kind === 'reject') {
        o.counts.dropped('rejected', batch.length);
        warn('OTLP collector refused a flow-log batch (dropped)', { records: batch.length, error: r.message });
        return;
      }
      const t = now();
      const delay = r.retryAfterMs !== undefined ? Math.min(r.retryAfterMs, maxRetryAfterMs) : backoff.next();
      if (t - started + delay > maxElapsedMs || t + delay > Math.min(deadline, closeDeadline)) {
        o.counts.dropped(closed ? 'closed' : 'retries_exhausted', batch.length);
        warn('OTLP flow-log batch dropped after retrying', { records: batch.length, error: r.message, closing: closed });
        return;
      }
      warn('OTLP export failed, retrying', { error: r.message, delayMs: delay, queued: queued() + batch.length });
      await sleep(delay);
    }
  };

  const pump = async (deadline = Number.POSITIVE_INFINITY): Promise<void> => {
    if (sending) return;
    sending = true;
    try {
      while (queued() > 0 && (queued() >= o.batchSize || closed || flushDue)) {
        flushDue = false;
        const batch = take();
        inFlight = batch.length;
        await deliver(batch, deadline);
        inFlight = 0;
      }
    } finally {
      sending = false;
      inFlight = 0;
      settleIdle();
      armFlush();
    }
  };

  let flushDue = false;
  const armFlush = (): void => {
    if (flushTimer || closed || queued() === 0) return;
    flushTimer = setTimeout(() => {
      flushTimer = undefined;
      flushDue = true;
      void pump();
    }, o.flushIntervalMs);
    flushTimer.unref();
  };

  let closing: Promise<void> | undefined;

  return {
    name: 'otlp',
    get pending() {
      return queued() + inFlight;
    },
    write(records, json = recordsJson(records)) {
      if (records.length === 0) return;
      if (closed) {
        o.counts.dropped('closed', records.length);
        return;
      }
      const room = Math.max(0, o.queueSize - queued() - inFlight);
      const n = Math.min(room, records.length);
      if (n > 0) {
        const t = msToUnixNano(now());
        let bad = 0;
        for (let i = 0; i < n; i++) {
          // The body is the record's JSON, made once for all the batch's sinks (the file's line).
          const body = json.at(i);
          if (body === undefined) bad++; // a record JSON cannot write (a cycle, a BigInt): counted, never thrown into the drain
          else queue.push(toLogRecord(records[i]!, t, body));
        }
        if (bad) o.counts.dropped('encode', bad);
      }
      o.counts.dropped('queue_full', records.length - n);
      if (queued() >= o.batchSize) void pump();
      else armFlush();
    },
    idle() {
      return new Promise((resolve) => {
        idleWaiters.push(resolve);
        if (!sending && queued() > 0) {
          flushDue = true;
          void pump();
        }
        settleIdle();
      });
    },
    [Symbol.asyncDispose]() {
      if (closing) return closing;
      closed = true;
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = undefined;
      const closeTimeout = o.closeTimeoutMs ?? 5_000;
      closeDeadline = now() + closeTimeout;
      closeTimer = setTimeout(() => {
        // Past the deadline: a send still waiting loses the race, a retry wait ends.
        closeDeadline = Math.min(closeDeadline, now());
        giveUp({ kind: 'retry', message: `closing: no answer in ${closeTimeout} ms` });
        wakeRetry();
      }, closeTimeout);
      closing = (async () => {
        // A retry wait in progress ends now: the sender retries once more or sees the deadline.
        wakeRetry();
        // The sender (the one running, or one started here) sends the queue until it is empty or
        // the deadline passes; past it every batch left is dropped{closed} without a request.
        const senderDone = new Promise<void>((resolve) => {
          if (!sending && queued() === 0) resolve();
          else idleWaiters.push(resolve);
        });
        if (!sending) void pump();
        await senderDone;
        if (closeTimer) clearTimeout(closeTimer);
        wakeRetry();
        const left = queued();
        head = queue.length;
        o.counts.dropped('closed', left);
        o.transport[Symbol.dispose]();
      })();
      return closing;
    },
  };
}
