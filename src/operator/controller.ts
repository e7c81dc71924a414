/**
 * Runs a level-triggered controller: workers take keys from the work queue and call reconcile(key),
 * which reads the latest state from the informer stores (never the event). Success forgets the key's
 * backoff; an error re-queues it rate-limited. Workers run only while `run` is active (the leader).
 */
import { WorkQueue, type Clock } from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { MetricWriters } from '../metrics/index.js';
import { queueMetrics, reconcileErrors, reconcileTime, reconcileTotal } from './metrics.js';

export type ReconcileResult = 'success' | { requeueAfterMs: number };

export interface ControllerOptions {
  readonly name: string;
  readonly reconcile: (key: string, signal: AbortSignal) => Promise<ReconcileResult>;
  readonly workers: number;
  readonly qps: number;
  readonly burst: number;
  readonly metrics: MetricWriters;
  readonly log: Logger;
  readonly clock?: Clock;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /**
   * Resolves when what reconcile reads is complete (the informers' first lists): workers start only
   * then. A reconcile against a store still listing takes an object that exists for a missing one
   * (a create that meets 409, then a patch, for each).
   */
  readonly ready?: (signal: AbortSignal) => Promise<void>;
}

export interface Controller {
  readonly queue: WorkQueue;
  /** Runs workers (once `ready`) until `signal` aborts; resolves when they have all stopped. */
  run(signal: AbortSignal): Promise<void>;
  /** True while `run` is active (this replica leads). A method, so that `{ ...controller }` keeps it live. */
  isRunning(): boolean;
  shutdown(): void;
}

export function createController(o: ControllerOptions): Controller {
  const queue = new WorkQueue({ qps: o.qps, burst: o.burst, clock: o.clock, baseDelayMs: o.baseDelayMs ?? 5, maxDelayMs: o.maxDelayMs ?? 300_000, metrics: queueMetrics(o.metrics, o.name) });
  const total = o.metrics.counter(reconcileTotal);
  const errors = o.metrics.counter(reconcileErrors);
  const time = o.metrics.histogram(reconcileTime);

  async function worker(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const key = await next(signal);
      if (key === undefined) return;
      const t0 = performance.now();
      try {
        const r = await o.reconcile(key, signal);
        if (r === 'success') {
          queue.forget(key);
          total.inc({ controller: o.name, result: 'success' });
        } else {
          queue.forget(key);
          queue.addAfter(key, r.requeueAfterMs);
          total.inc({ controller: o.name, result: 'requeue_after' });
        }
      } catch (e) {
        if (signal.aborted) {
          // Leadership ended mid-reconcile: the key goes back (queued again by done() below).
          queue.add(key);
          continue;
        }
        total.inc({ controller: o.name, result: 'error' });
        errors.inc({ controller: o.name });
        queue.addRateLimited(key);
        o.log.warn('reconcile failed; retrying with backoff', { controller: o.name, key, failures: queue.failures(key), error: (e as Error).message });
      } finally {
        time.observe({ controller: o.name }, (performance.now() - t0) / 1000);
        queue.done(key);
      }
    }
  }

  /** The next key, or undefined when leadership ends or the queue shuts down. */
  function next(signal: AbortSignal): Promise<string | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      let settled = false;
      const onAbort = (): void => {
        if (!settled) {
          settled = true;
          resolve(undefined);
        }
      };
      signal.addEventListener('abort', onAbort, { once: true });
      void queue.get().then((key) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) {
          // Leadership ended while waiting: hand the key back for whoever works next.
          if (key !== undefined) {
            queue.done(key);
            queue.add(key);
          }
          return;
        }
        settled = true;
        resolve(key);
      });
    });
  }

  let running = 0;
  return {
    queue,
    async run(signal) {
      running++;
      try {
        if (o.ready) {
          try {
            await o.ready(signal);
          } catch (e) {
            if (signal.aborted) return;
            throw e;
          }
        }
        await Promise.all(Array.from({ length: o.workers }, () => worker(signal)));
      } finally {
        running--;
      }
    },
    isRunning: () => running > 0,
    shutdown: () => queue.shutdown(),
  };
}
