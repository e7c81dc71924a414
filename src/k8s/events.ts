/**
 * Kubernetes Events for state changes (core/v1). Repeats of the same (object, reason, message) within
 * the dedupe window are dropped, and the number of Events in flight is bounded, so a storm of
 * failures cannot turn into a storm of writes. Failures to record are logged, never thrown.
 */
import type { RestClient } from './rest.js';
import { collectionPath, resources, type ResourceRef } from './resources.js';
import { apiVersionOf } from './resources.js';
import type { Logger } from '../log/index.js';

export interface EventTarget {
  readonly resource: ResourceRef;
  readonly namespace?: string | undefined;
  readonly name: string;
  readonly uid?: string | undefined;
}

export interface EventRecorder {
  normal(target: EventTarget, reason: string, message: string): void;
  warning(target: EventTarget, reason: string, message: string): void;
}

export function createEventRecorder(o: { client: RestClient; component: string; host?: string; log?: Logger; dedupeMs?: number; maxInFlight?: number }): EventRecorder {
  const seen = new Map<string, number>();
  let inFlight = 0;
  const dedupeMs = o.dedupeMs ?? 600_000;
  const record = (type: 'Normal' | 'Warning', t: EventTarget, reason: string, message: string): void => {
    const id = `${t.resource.kind}/${t.namespace ?? ''}/${t.name}/${reason}/${message}`;
    const now = Date.now();
    const last = seen.get(id);
    if (last !== undefined && now - last < dedupeMs) return;
    if (inFlight >= (o.maxInFlight ?? 20)) return;
    seen.set(id, now);
    if (seen.size > 5000) for (const [k, at] of seen) if (now - at > dedupeMs || seen.size > 5000) seen.delete(k);
    const ns = t.namespace ?? 'default';
    const ts = new Date(now).toISOString();
    inFlight++;
    o.client
      .request('POST', collectionPath(resources.events, ns), {
        body: {
          apiVersion: 'v1', kind: 'Event',
          metadata: { generateName: `${t.name}.`, namespace: ns },
          involvedObject: { apiVersion: apiVersionOf(t.resource), kind: t.resource.kind, name: t.name, namespace: t.namespace, uid: t.uid },
          reason, message: message.slice(0, 1024), type, count: 1, firstTimestamp: ts, lastTimestamp: ts,
          source: { component: o.component, host: o.host }, reportingComponent: o.component, reportingInstance: o.host ?? o.component,
        },
        timeoutMs: 10_000,
      })
      .catch((e: unknown) => o.log?.debug('could not record an event', { reason, error: (e as Error).message }))
      .finally(() => inFlight--);
  };
  return {
    normal: (t, r, m) => record('Normal', t, r, m),
    warning: (t, r, m) => record('Warning', t, r, m),
  };
}
