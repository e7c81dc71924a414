/**
 * Pod -> RetinaEndpoint. Each RetinaEndpoint carries the Pod's IPs, node IP, containers, controller
 * owners and the allowlisted labels/annotations, and a metadata.ownerReference to the Pod so the garbage
 * collector removes it with the Pod. Reconcile is level-triggered: it compares the Pod in the store
 * with the RetinaEndpoint in the store and writes only when the slim content differs.
 */
import { createHash } from 'node:crypto';
import {
  apiVersionOf, collectionPath, isApiError, keyAllowlist, objectPath, pickKeys, podIps, podIsEndpoint, resources, splitKey,
  type EventRecorder, type Informer, type InformerFactory, type PodWire, type RestClient, type RetinaEndpoint, type RetinaEndpointSpec,
} from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { MetricWriters } from '../metrics/index.js';
import { createController, type Controller, type ReconcileResult } from './controller.js';
import { apiWrites } from './metrics.js';

/** What the operator keeps of a Pod. */
export interface SlimPod {
  readonly uid: string;
  readonly eligible: boolean;
  /** Terminating: an existing RetinaEndpoint stays until the pod is gone, none is created. */
  readonly deleting: boolean;
  readonly spec: RetinaEndpointSpec | undefined;
}

/**
 * What the operator keeps of a RetinaEndpoint: its Pod's uid and a hash of its spec (canonical JSON),
 * all reconcile compares. The spec itself took about 600 bytes more per endpoint (815 against 222 with
 * the store's key and entry, 100 000 RetinaEndpoints parsed as the reflector does): 60 MB of heap at
 * 100 000 pods, where the chart's 384Mi limit leaves V8 a heap of 259 MB.
 */
export interface SlimEndpoint {
  readonly ownerUid: string | undefined;
  readonly specHash: string;
}

/** The hash SlimEndpoint keeps: sha1 of the canonical JSON, base64. */
export const specHash = (spec: unknown): string => createHash('sha1').update(canonical(spec)).digest('base64');

export interface RetinaEndpointControllerOptions {
  readonly client: RestClient;
  readonly informers: InformerFactory;
  readonly labelAllowlist: readonly string[];
  readonly annotationAllowlist: readonly string[];
  readonly workers: number;
  readonly qps: number;
  readonly burst: number;
  readonly metrics: MetricWriters;
  readonly events: EventRecorder;
  readonly log: Logger;
}

export interface RetinaEndpointController extends Controller {
  readonly pods: Informer<SlimPod>;
  readonly endpoints: Informer<SlimEndpoint>;
  /** Queues every known key (resync, and on becoming leader): keys with work in the high lane, the rest low. */
  enqueueAll(): void;
}

/** Stable JSON: keys sorted, so equal content compares equal whatever the order on the wire. */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x,
  );
}

export function podToSpec(p: PodWire, allowLabels: (k: string) => boolean, allowAnnotations: (k: string) => boolean): RetinaEndpointSpec {
  const ips = podIps(p);
  const spec: RetinaEndpointSpec = { podIP: ips[0] as string, podIPs: ips };
  if (p.status?.hostIP) spec.nodeIP = p.status.hostIP;
  const containers = (p.status?.containerStatuses ?? []).map((c) => (c.containerID ? { name: c.name, id: c.containerID } : { name: c.name }));
  if (containers.length) spec.containers = containers;
  const refs = p.metadata.ownerReferences ?? [];
  const owners = (refs.some((r) => r.controller) ? refs.filter((r) => r.controller) : refs).map((r) => ({ apiVersion: r.apiVersion, kind: r.kind, name: r.name }));
  if (owners.length) spec.ownerReferences = owners;
  const labels = pickKeys(p.metadata.labels, allowLabels);
  if (Object.keys(labels).length) spec.labels = labels;
  const annotations = pickKeys(p.metadata.annotations, allowAnnotations);
  if (Object.keys(annotations).length) spec.annotations = annotations;
  return spec;
}

export function createRetinaEndpointController(o: RetinaEndpointControllerOptions): RetinaEndpointController {
  const allowLabels = keyAllowlist(o.labelAllowlist);
  const allowAnnotations = keyAllowlist(o.annotationAllowlist);
  const log = o.log.child({ controller: 'retinaendpoint' });
  const writes = o.metrics.counter(apiWrites);

  const pods = o.informers.informer<PodWire, SlimPod>({
    resource: resources.pods,
    transform: (p) => {
      const eligible = podIsEndpoint(p);
      return { uid: p.metadata.uid ?? '', eligible, deleting: Boolean(p.metadata.deletionTimestamp), spec: eligible ? podToSpec(p, allowLabels, allowAnnotations) : undefined };
    },
  });
  const endpoints = o.informers.informer<RetinaEndpoint, SlimEndpoint>({
    resource: resources.retinaEndpoints,
    transform: (re) => ({ ownerUid: re.metadata.ownerReferences?.find((r) => r.kind === 'Pod')?.uid, specHash: specHash(re.spec ?? {}) }),
  });

  async function reconcile(key: string, signal: AbortSignal): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const pod = pods.get(key);
    const re = endpoints.get(key);
    const path = objectPath(resources.retinaEndpoints, namespace, name);
    if (!pod || !pod.eligible || !pod.spec) {
      if (!re) return 'success';
      try {
        await o.client.request('DELETE', path, { signal });
        writes.inc({ resource: 'retinaendpoints', verb: 'delete' });
        log.debug('deleted RetinaEndpoint', { key });
      } catch (e) {
        if (!isApiError(e, 404)) throw e;
      }
      return 'success';
    }
    const desired = pod.spec;
    // Every agent receives every byte of a RetinaEndpoint: no labels of our own, no default-valued fields.
    const ownerRef = { apiVersion: 'v1', kind: 'Pod', name, uid: pod.uid };
    if (!re) {
      if (pod.deleting) return 'success';
      try {
        await o.client.request('POST', collectionPath(resources.retinaEndpoints, namespace), {
          signal,
          body: {
            apiVersion: apiVersionOf(resources.retinaEndpoints), kind: 'RetinaEndpoint',
            metadata: { name, namespace, ownerReferences: [ownerRef] },
            spec: desired,
          },
        });
        writes.inc({ resource: 'retinaendpoints', verb: 'create' });
        return 'success';
      } catch (e) {
        // The namespace is being deleted: its pods go too, nothing to create.
        if (isApiError(e, 403) && /being terminated/.test(e.message)) return 'success';
        if (!isApiError(e, 409)) {
          if (isApiError(e, 422) || isApiError(e, 400)) o.events.warning({ resource: resources.pods, namespace, name, uid: pod.uid }, 'RetinaEndpointInvalid', (e as Error).message);
          throw e;
        }
        // It exists, and our store has not seen it yet: fall through to a patch of what is there.
      }
    } else if (re.ownerUid === pod.uid && re.specHash === specHash(desired)) {
      return 'success'; // unchanged: no write
    }
    // Replace spec (and the owner when the Pod was recreated under the same name) in one JSON patch.
    await o.client.request('PATCH', path, {
      signal,
      contentType: 'application/json-patch+json',
      body: [
        { op: 'add', path: '/spec', value: desired },
        { op: 'add', path: '/metadata/ownerReferences', value: [ownerRef] },
      ],
    });
    writes.inc({ resource: 'retinaendpoints', verb: 'patch' });
    return 'success';
  }

  const controller = createController({
    name: 'retinaendpoint', reconcile, workers: o.workers, qps: o.qps, burst: o.burst, metrics: o.metrics, log,
    ready: async (signal) => {
      await Promise.all([pods.waitForSync(signal), endpoints.waitForSync(signal)]);
      // The stores are complete now: the pass over every key again, its work sorted out right.
      enqueueAll();
    },
  });
  // Changes are queued only while leading: a standby's queue would keep every key that ever changed
  // (under churn, every pod name ever made); a new leader starts with a pass over every key instead.
  const enqueue = (k: string): void => {
    if (controller.isRunning()) controller.queue.add(k);
  };
  /**
   * Every key: those with work to do (an endpoint pod without a RetinaEndpoint, a RetinaEndpoint
   * without one) first, the rest (whose content is compared, seldom written) in the low lane, behind
   * any change that arrives meanwhile.
   */
  const enqueueAll = (): void => {
    for (const k of pods.keys()) {
      const p = pods.get(k);
      controller.queue.add(k, p?.eligible && !p.deleting && !endpoints.get(k) ? 'high' : 'low');
    }
    for (const k of endpoints.keys()) {
      const p = pods.get(k);
      controller.queue.add(k, p?.eligible ? 'low' : 'high');
    }
  };
  pods.subscribe({ added: enqueue, updated: enqueue, deleted: enqueue });
  endpoints.subscribe({ added: enqueue, updated: enqueue, deleted: enqueue });
  return { ...controller, pods, endpoints, enqueueAll };
}
