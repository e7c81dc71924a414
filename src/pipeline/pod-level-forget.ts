/**
 * Deleted pods lose their advanced series: each pod delete (its namespace, name and IPs, taken
 * from the deleted object, so from delete time) is queued, and once per batch (`batchMs`) the
 * Metrics Module removes the whole queue in one pass over each family (`forgetPodsInSteps`), off
 * the per-event path and in steps of `stepSeries` series, so that ring drains run in between.
 * Each batch is removed again after `graceMs`, for series that flows already on their way
 * re-created.
 *
 * A live pod's series are never removed: at each pass an identity still held is left out (the
 * pod came back under its name, as a StatefulSet pod does; its name lives in another namespace,
 * for label sets without `namespace`; its IP now belongs to another pod, a Service or a node, for
 * label sets with `ip` but no `podname`).
 */
import type { IpCache, PodEndpoint } from '../cache/index.js';
import type { Informer } from '../k8s/index.js';
import { errorFields, type Logger } from '../log/index.js';
import { drain } from '../metrics/index.js';
import type { GonePods, MetricsModule } from '../metrics/module/index.js';

export interface PodForgetterOptions {
  readonly pods: Informer<PodEndpoint>;
  readonly cache: IpCache;
  readonly module: Pick<MetricsModule, 'forgetPodsInSteps'>;
  readonly log: Logger;
  /** How long deletes gather before one pass removes them all; default 250 ms. */
  readonly batchMs?: number;
  /** A batch is removed again this long after its first pass; default 5 s. */
  readonly graceMs?: number;
  /** Series a pass looks at before it lets other work run; default 4 096 (a few ms of CPU). */
  readonly stepSeries?: number;
}

export interface PodForgetter extends Disposable {
  /** Runs the pending first pass now (and any grace pass that is due). */
  flush(): void;
}

interface Batch {
  readonly due: number;
  readonly pods: readonly PodEndpoint[];
}

export function startPodForgetter(o: PodForgetterOptions): PodForgetter {
  const log = o.log.child({ component: 'pod-forget' });
  const batchMs = o.batchMs ?? 250;
  const graceMs = o.graceMs ?? 5000;
  const stepSeries = o.stepSeries ?? 4096;
  let queue: PodEndpoint[] = [];
  const grace: Batch[] = [];
  let timer: NodeJS.Timeout | undefined;
  /** When the timer fires (ms). */
  let timerAt = 0;
  let disposed = false;

  /** The pass under way: one step (`stepSeries` series) per macrotask, so flows get through in between. */
  let pass: { job: Generator<void, number, void>; pods: number; t0: number; steps: number } | undefined;
  let stepping: NodeJS.Immediate | undefined;

  /** Sets the timer for the next pass: the batch's, or the first grace pass due; an earlier one wins. */
  function schedule(): void {
    if (disposed || pass) return; // a pass under way schedules the next when it ends
    const now = Date.now();
    const at = Math.min(queue.length ? now + batchMs : Infinity, grace.length ? (grace[0] as Batch).due : Infinity);
    if (at === Infinity) return;
    if (timer && timerAt <= at) return;
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(begin, Math.max(0, at - now));
    timer.unref();
  }

  /**
   * The pods whose pass is due now: the queued batch (which then waits for its grace pass) and the
   * grace batches due before the next batch would be, so that passes come at most once per batch.
   */
  function due(): PodEndpoint[] {
    const now = Date.now();
    const pods: PodEndpoint[] = [];
    while (grace.length && (grace[0] as Batch).due <= now + batchMs) pods.push(...(grace.shift() as Batch).pods);
    if (queue.length) {
      grace.push({ due: now + graceMs, pods: queue });
      pods.push(...queue);
      queue = [];
    }
    return pods;
  }

  function begin(): void {
    timer = undefined;
    if (disposed || pass) return;
    const pods = due();
    if (!pods.length) return schedule();
    pass = { job: o.module.forgetPodsInSteps(stillGone(pods, o.cache), stepSeries), pods: pods.length, t0: performance.now(), steps: 0 };
    step();
  }

  function step(): void {
    stepping = undefined;
    if (disposed || !pass) return;
    pass.steps++;
    let r: IteratorResult<void, number>;
    try {
      r = pass.job.next();
    } catch (e) {
      // Not expected (the module's pass only reads and removes); the next batch starts afresh.
      log.error('removing deleted pods\' series failed; the series wait for the next batch or their TTL', { pods: pass.pods, error: errorFields(e as Error) });
      pass = undefined;
      schedule();
      return;
    }
    if (!r.done) {
      stepping = setImmediate(step);
      stepping.unref();
      return;
    }
    end(r.value);
  }

  function end(removed: number): void {
    const p = pass as NonNullable<typeof pass>;
    pass = undefined;
    log.debug('deleted pods\' series removed', { pods: p.pods, series: removed, steps: p.steps, ms: Math.round(performance.now() - p.t0) });
    schedule();
  }

  /** Runs the pass under way, and the one due now, to their end at once. */
  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (stepping) clearImmediate(stepping);
    stepping = undefined;
    if (disposed) return;
    if (pass) end(drain(pass.job));
    const pods = due();
    if (pods.length) {
      pass = { job: o.module.forgetPodsInSteps(stillGone(pods, o.cache), Infinity), pods: pods.length, t0: performance.now(), steps: 1 };
      end(drain(pass.job));
    }
  }

  const sub = o.pods.subscribe({
    deleted: (_k, old) => {
      queue.push(old);
      schedule();
    },
  });

  return {
    flush,
    [Symbol.dispose]() {
      disposed = true;
      if (timer) clearTimeout(timer);
      if (stepping) clearImmediate(stepping);
      timer = undefined;
      stepping = undefined;
      pass = undefined;
      sub[Symbol.dispose]();
    },
  };
}

/** The identities of deleted pods that no live pod (or, for IPs, no live endpoint) holds now. */
export function stillGone(deleted: readonly PodEndpoint[], cache: IpCache): GonePods {
  const pods: { namespace: string; name: string }[] = [];
  const names = new Set<string>();
  const ips = new Set<string>();
  for (const p of deleted) {
    if (!cache.pod(p.namespace, p.name)) {
      pods.push({ namespace: p.namespace, name: p.name });
      names.add(p.name);
    }
    for (const ip of p.ips) if (!cache.lookup(ip)) ips.add(ip);
  }
  if (names.size) for (const live of cache.pods()) names.delete(live.name);
  return { pods, names: [...names], ips: [...ips] };
}
