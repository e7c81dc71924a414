/**
 * Deleted pods lose their advanced series: each pod delete (its namespace, name and IPs, taken
 * from the deleted object, so from delete time) is queued, and once per batch (`batchMs`) the
 * Metrics Module removes the whole queue in one pass over each family (`forgetPods`), off the
 * per-event path. Each batch is removed again after `graceMs`, for series that flows already on
 * their way re-created.
 *
 * A live pod's series are never removed: at each pass an identity still held is left out (the
 * pod came back under its name, as a StatefulSet pod does; its name lives in another namespace,
 * for label sets without `namespace`; its IP now belongs to another pod, a Service or a node, for
 * label sets with `ip` but no `podname`).
 */
import type { IpCache, PodEndpoint } from '../cache/index.js';
import type { Informer } from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { GonePods, MetricsModule } from '../metrics/module/index.js';

export interface PodForgetterOptions {
  readonly pods: Informer<PodEndpoint>;
  readonly cache: IpCache;
  readonly module: Pick<MetricsModule, 'forgetPods'>;
  readonly log: Logger;
  /** How long deletes gather before one pass removes them all; default 250 ms. */
  readonly batchMs?: number;
  /** A batch is removed again this long after its first pass; default 5 s. */
  readonly graceMs?: number;
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
  let queue: PodEndpoint[] = [];
  const grace: Batch[] = [];
  let timer: NodeJS.Timeout | undefined;
  /** When the timer fires (ms). */
  let timerAt = 0;
  let disposed = false;

  /** Sets the timer for the next pass: the batch's, or the first grace pass due; an earlier one wins. */
  function schedule(): void {
    if (disposed) return;
    const now = Date.now();
    const at = queue.length ? now + batchMs : grace.length ? (grace[0] as Batch).due : -1;
    if (at < 0 || (timer && timerAt <= at)) return;
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(flush, Math.max(0, at - now));
    timer.unref();
  }

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (disposed) return;
    const now = Date.now();
    const pods: PodEndpoint[] = [];
    while (grace.length && (grace[0] as Batch).due <= now) pods.push(...(grace.shift() as Batch).pods);
    if (queue.length) {
      grace.push({ due: now + graceMs, pods: queue });
      pods.push(...queue);
      queue = [];
    }
    if (pods.length) {
      const t0 = performance.now();
      const removed = o.module.forgetPods(stillGone(pods, o.cache));
      log.debug('deleted pods\' series removed', { pods: pods.length, series: removed, ms: Math.round(performance.now() - t0) });
    }
    schedule();
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
      timer = undefined;
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
