/**
 * Pods -> RetinaEndpointSlices (`retinaEndpointSlices: true`): the endpoint pods of each namespace
 * packed into slices of at most `maxSize` entries, as Cilium's CiliumEndpointSlice controller and
 * Kubernetes' EndpointSlice controller batch endpoints. An agent then syncs about E / maxSize objects
 * instead of E RetinaEndpoints, and a burst of changes to one slice (a Deployment rolled) is one write
 * while the slice waits in the queue.
 *
 * The slices' membership lives here: `sliceOf` (pod -> slice) and `members` (slice -> pod names).
 * It is rebuilt from the slices in the API server each time this replica starts leading (a pod found
 * in two slices stays in the first, the other is rewritten without it), then kept by pod events: a
 * new endpoint pod goes into a slice of its namespace with room, a gone one leaves its slice, and a
 * slice left empty is deleted. Pods never move between slices otherwise. Keys of the work queue are
 * slices ("namespace/name"); reconcile compares the slice's desired entries with the stored one (a
 * hash) and writes only a difference.
 */
import { randomBytes } from 'node:crypto';
import {
  apiVersionOf, collectionPath, isApiError, objectPath, resources, splitKey,
  type Informer, type InformerFactory, type RestClient, type RetinaEndpointSlice, type RetinaEndpointSliceEntry,
} from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { MetricWriters } from '../metrics/index.js';
import { createController, type Controller, type ReconcileResult } from './controller.js';
import { apiWrites } from './metrics.js';
import { specHash, type SlimPod } from './retina-endpoint-controller.js';

/** What the operator keeps of a stored slice: its entries' names and a hash of their content. */
export interface SlimSliceState {
  readonly names: readonly string[];
  readonly hash: string;
}

export interface RetinaEndpointSliceControllerOptions {
  readonly client: RestClient;
  readonly informers: InformerFactory;
  /** The RetinaEndpoint controller's Pod informer (the same slim pods). */
  readonly pods: Informer<SlimPod>;
  readonly maxSize: number;
  readonly workers: number;
  readonly qps: number;
  readonly burst: number;
  readonly metrics: MetricWriters;
  readonly log: Logger;
  /** Slice names (tests); default `res-` and 10 random hex digits. */
  readonly newName?: () => string;
}

export interface RetinaEndpointSliceController extends Controller {
  readonly slices: Informer<SlimSliceState>;
  enqueueAll(): void;
  /** The membership as this replica holds it: slice key -> pod names (tests, diagnostics). */
  membership(): Map<string, string[]>;
}


/** A pod's entry: what agents read (no containers, owners without apiVersion). */
export function sliceEntry(name: string, p: SlimPod): RetinaEndpointSliceEntry | undefined {
  const s = p.spec;
  if (!p.eligible || !s) return undefined;
  const e: RetinaEndpointSliceEntry = { name, podIPs: s.podIPs?.length ? [...s.podIPs] : [s.podIP] };
  if (s.nodeIP) e.nodeIP = s.nodeIP;
  if (s.ownerReferences?.length) e.ownerReferences = s.ownerReferences.map((o) => ({ kind: o.kind, name: o.name }));
  if (s.labels && Object.keys(s.labels).length) e.labels = s.labels;
  if (s.annotations && Object.keys(s.annotations).length) e.annotations = s.annotations;
  return e;
}

export function createRetinaEndpointSliceController(o: RetinaEndpointSliceControllerOptions): RetinaEndpointSliceController {
  const log = o.log.child({ controller: 'retinaendpointslice' });
  const writes = o.metrics.counter(apiWrites);
  const newName = o.newName ?? ((): string => `res-${randomBytes(5).toString('hex')}`);
  const slices = o.informers.informer<RetinaEndpointSlice, SlimSliceState>({
    resource: resources.retinaEndpointSlices,
    transform: (s) => {
      const entries = Array.isArray(s.endpoints) ? s.endpoints : [];
      return { names: entries.map((e) => String(e?.name)), hash: specHash(entries) };
    },
  });

  const sliceOf = new Map<string, string>();
  const members = new Map<string, Set<string>>();
  /** Slices with room, by namespace. */
  const open = new Map<string, Set<string>>();

  const nsOf = (key: string): string => key.slice(0, key.indexOf('/'));
  const setOpen = (slice: string): void => {
    const ns = nsOf(slice);
    const size = members.get(slice)?.size ?? 0;
    let s = open.get(ns);
    if (size < o.maxSize) {
      if (!s) open.set(ns, (s = new Set()));
      s.add(slice);
    } else if (s) {
      s.delete(slice);
      if (!s.size) open.delete(ns);
    }
  };
  const wantsEntry = (podKey: string): boolean => {
    const p = o.pods.get(podKey);
    return Boolean(p?.eligible && p.spec);
  };
  const assign = (podKey: string, slice: string): void => {
    let m = members.get(slice);
    if (!m) members.set(slice, (m = new Set()));
    m.add(splitKey(podKey).name);
    sliceOf.set(podKey, slice);
    setOpen(slice);
  };
  /** A slice of the pod's namespace with room (the fullest first keeps slices few), or a new one. */
  const place = (podKey: string): string => {
    const ns = splitKey(podKey).namespace ?? '';
    let best: string | undefined;
    let bestSize = -1;
    for (const s of open.get(ns) ?? []) {
      const n = members.get(s)?.size ?? 0;
      if (n > bestSize) [best, bestSize] = [s, n];
    }
    const slice = best ?? [ns, newName()].join('/');
    assign(podKey, slice);
    return slice;
  };
  const unassign = (podKey: string): string | undefined => {
    const slice = sliceOf.get(podKey);
    if (!slice) return undefined;
    sliceOf.delete(podKey);
    members.get(slice)?.delete(splitKey(podKey).name);
    setOpen(slice);
    return slice;
  };

  /** Membership from the stored slices, then every endpoint pod without a slice placed. */
  const rebuild = (): void => {
    sliceOf.clear();
    members.clear();
    open.clear();
    let duplicates = 0;
    for (const key of slices.keys()) {
      members.set(key, new Set());
      const ns = nsOf(key);
      for (const name of slices.get(key)?.names ?? []) {
        const podKey = [ns, name].join('/');
        if (sliceOf.has(podKey)) duplicates++;
        else if (wantsEntry(podKey) && (members.get(key)?.size ?? 0) < o.maxSize) assign(podKey, key);
      }
      setOpen(key);
    }
    let placed = 0;
    for (const podKey of o.pods.keys()) {
      if (!sliceOf.has(podKey) && wantsEntry(podKey)) {
        place(podKey);
        placed++;
      }
    }
    log.info('slice membership rebuilt', { slices: members.size, pods: sliceOf.size, placed, duplicates });
  };

  const desired = (slice: string): RetinaEndpointSliceEntry[] => {
    const ns = nsOf(slice);
    const out: RetinaEndpointSliceEntry[] = [];
    for (const name of [...(members.get(slice) ?? [])].sort()) {
      const p = o.pods.get([ns, name].join('/'));
      const e = p ? sliceEntry(name, p) : undefined;
      if (e) out.push(e);
    }
    return out;
  };

  async function reconcile(key: string, signal: AbortSignal): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const want = desired(key);
    const have = slices.get(key);
    const path = objectPath(resources.retinaEndpointSlices, namespace, name);
    if (!want.length) {
      if (have) {
        try {
          await o.client.request('DELETE', path, { signal });
          writes.inc({ resource: 'retinaendpointslices', verb: 'delete' });
        } catch (e) {
          if (!isApiError(e, 404)) throw e;
        }
      }
      // A pod placed here meanwhile keeps the slice: written on the next pass.
      if (!members.get(key)?.size) {
        members.delete(key);
        open.get(namespace ?? '')?.delete(key);
      } else return { requeueAfterMs: 0 };
      return 'success';
    }
    const hash = specHash(want);
    if (have?.hash === hash) return 'success';
    if (!have) {
      try {
        await o.client.request('POST', collectionPath(resources.retinaEndpointSlices, namespace), {
          signal,
          body: { apiVersion: apiVersionOf(resources.retinaEndpointSlices), kind: 'RetinaEndpointSlice', metadata: { name, namespace }, endpoints: want },
        });
        writes.inc({ resource: 'retinaendpointslices', verb: 'create' });
        return 'success';
      } catch (e) {
        if (isApiError(e, 403) && /being terminated/.test(e.message)) return 'success';
        if (!isApiError(e, 409)) throw e;
        // it exists and our store has not seen it yet: replace its entries
      }
    }
    await o.client.request('PATCH', path, { signal, contentType: 'application/merge-patch+json', body: { endpoints: want } });
    writes.inc({ resource: 'retinaendpointslices', verb: 'patch' });
    return 'success';
  }

  const controller = createController({
    name: 'retinaendpointslice', reconcile, workers: o.workers, qps: o.qps, burst: o.burst, metrics: o.metrics, log,
    ready: async (signal) => {
      await Promise.all([o.pods.waitForSync(signal), slices.waitForSync(signal)]);
      rebuild();
      enqueueAll();
    },
  });
  let built = false;
  const running = (): boolean => controller.isRunning() && built;
  const enqueueAll = (): void => {
    if (!controller.isRunning()) return;
    built = true;
    for (const k of members.keys()) controller.queue.add(k, 'low');
    for (const k of slices.keys()) if (!members.has(k)) controller.queue.add(k, 'high');
  };
  const onPod = (podKey: string): void => {
    if (!running()) return;
    const cur = sliceOf.get(podKey);
    if (wantsEntry(podKey)) controller.queue.add(cur ?? place(podKey));
    else if (cur) controller.queue.add(unassign(podKey) as string);
  };
  o.pods.subscribe({ added: onPod, updated: onPod, deleted: onPod });
  const onSlice = (key: string): void => {
    if (running()) controller.queue.add(key);
  };
  slices.subscribe({ added: onSlice, updated: onSlice, deleted: onSlice });
  return {
    ...controller,
    slices,
    enqueueAll,
    membership: () => new Map([...members].map(([k, v]) => [k, [...v].sort()])),
  };
}
