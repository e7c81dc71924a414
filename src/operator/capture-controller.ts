/**
 * Capture -> one Job per target node, and the Jobs' progress back into the Capture's status.
 * Level-triggered: every reconcile reads the Capture, its Jobs and their Pods from the stores and
 * writes only what differs. Jobs are created once: only while the Capture has no startTime, and only
 * for nodes without a Job in a live LIST (so a restarted operator, or a store that lags behind our own
 * writes, never creates a second Job for a node). The finalizer `kappio.io/capture-cleanup` (Retina's
 * name) deletes the Jobs and the capture's own Secrets before the Capture goes.
 */
import {
  apiVersionOf, collectionPath, isApiError, objectPath, resources,
  type Capture, type CaptureStatus, type EventRecorder, type Informer, type InformerFactory,
  type KubeList, type KubeObject, type RestClient,
} from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { MetricWriters } from '../metrics/index.js';
import {
  CAPTURE_APP_LABEL, CAPTURE_APP_VALUE, CAPTURE_NAME_LABEL, CAPTURE_SERVICE_ACCOUNT, JobNumLimitError, TargetError, TriggerOnWindowsError, captureJobs, captureSelector,
  referencedSecrets, resolveTargets, validateCaptureSpec,
} from '../capture/index.js';
import { CONDITION_COMPLETE, CONDITION_ERROR, captureStatus, condition, slimCapture, slimJob, slimPod, type CaptureReason, type JobWire, type PodWire, type SlimCapture, type SlimJob, type SlimPod } from './capture-status.js';
import { createController, type Controller, type ReconcileResult } from './controller.js';
import { apiWrites } from './metrics.js';
import { canonical } from './retina-endpoint-controller.js';

export const CAPTURE_FINALIZER = 'kappio.io/capture-cleanup';
const SERVICE_ACCOUNTS = { group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true } as const;
const WAIT_RETRY_MIN_MS = 1000;
const WAIT_RETRY_MAX_MS = 30_000;
const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings', kind: 'RoleBinding', namespaced: true } as const;

export interface CaptureControllerOptions {
  readonly client: RestClient;
  readonly informers: InformerFactory;
  readonly metrics: MetricWriters;
  readonly events: EventRecorder;
  readonly log: Logger;
  readonly linuxImage: string;
  readonly windowsImage: string;
  readonly hostPathBaseDir: string;
  readonly jobNumLimit: number;
  readonly deadlineSlackMs: number;
  readonly workers?: number;
  /** When set: capture pods run as ServiceAccount retina-capture, bound to this ClusterRole in their namespace. */
  readonly podClusterRole?: string;
}


export interface CaptureController extends Controller {
  enqueueAll(): void;
}

export function createCaptureController(o: CaptureControllerOptions): CaptureController {
  const log = o.log.child({ controller: 'capture' });
  const writes = o.metrics.counter(apiWrites);
  const captures = o.informers.informer<Capture, SlimCapture>({
    resource: resources.captures,
    transform: slimCapture,
  });
  const jobs: Informer<SlimJob> = o.informers.informer<JobWire, SlimJob>({
    resource: resources.jobs,
    labelSelector: captureSelector(),
    transform: slimJob,
  });
  const pods: Informer<SlimPod> = o.informers.informer<PodWire, SlimPod>({
    resource: resources.pods,
    labelSelector: captureSelector(),
    transform: slimPod,
  });

  const capturePath = (c: SlimCapture, sub?: 'status'): string => objectPath(resources.captures, c.namespace, c.name, sub);
  const target = (c: SlimCapture): { resource: typeof resources.captures; namespace: string; name: string; uid: string } => ({ resource: resources.captures, namespace: c.namespace, name: c.name, uid: c.uid });
  const jobsOf = (c: SlimCapture): SlimJob[] => jobs.list().filter((j) => j.namespace === c.namespace && j.capture === c.name);
  /**
   * Captures that cannot start yet (targets not ready, a busy Windows node, a missing Secret) -> how often they
   * waited, and the busy Windows nodes they wait for.
   */
  const waiting = new Map<string, { readonly tries: number; readonly nodes: ReadonlySet<string> }>();
  /**
   * The next retry of a waiting capture: 1 s, doubling, at most 30 s. A capture waiting for busy Windows nodes
   * is also woken by a change of a capture Job or pod on one of them (`wakeWaiting`); the others only by their
   * retry or a change of their own (waking every waiter on every capture event made each Job and pod change
   * of the cluster a round of API reads per waiting capture).
   */
  const retryLater = (c: SlimCapture, nodes: readonly string[] = []): ReconcileResult => {
    const key = `${c.namespace}/${c.name}`;
    const n = waiting.get(key)?.tries ?? 0;
    waiting.set(key, { tries: n + 1, nodes: new Set(nodes) });
    return { requeueAfterMs: Math.min(WAIT_RETRY_MIN_MS * 2 ** n, WAIT_RETRY_MAX_MS) };
  };
  /** A capture's Job still occupies its node: not finished, and its pod not terminated either. */
  const running = (j: SlimJob): boolean => {
    if (j.done) return false;
    const p = pods.list().find((x) => x.namespace === j.namespace && x.job === j.name);
    return p?.phase !== 'Succeeded' && p?.phase !== 'Failed';
  };

  async function liveJobs(c: SlimCapture, signal: AbortSignal): Promise<JobWire[]> {
    const l = await o.client.request<KubeList<JobWire>>('GET', collectionPath(resources.jobs, c.namespace), { query: { labelSelector: captureSelector(c.name) }, signal });
    return l.items;
  }

  /**
   * Writes `status` unless the capture already has it. False when it was not written: the capture was deleted
   * meanwhile (its delete event queues it again) or changed since the store's copy (409: the newer version's
   * event queues it again). What must follow a written status (the clean-up after success) waits for true.
   */
  async function patchStatus(c: SlimCapture, status: CaptureStatus, signal: AbortSignal): Promise<boolean> {
    if (canonical(status) === canonical(c.status)) return true;
    try {
      const metadata = c.resourceVersion ? { resourceVersion: c.resourceVersion } : {};
      await o.client.request('PATCH', capturePath(c, 'status'), { signal, contentType: 'application/merge-patch+json', body: { metadata, status } });
    } catch (e) {
      if (isApiError(e, 404) || isApiError(e, 409)) return false;
      throw e;
    }
    writes.inc({ resource: 'captures', verb: 'patch-status' });
    return true;
  }

  /** Deletes the capture's Jobs (and their pods) and the Secrets it owns (labelled as the capture's). */
  async function cleanUp(c: SlimCapture, signal: AbortSignal): Promise<void> {
    const live = await liveJobs(c, signal);
    const secretNames = new Set<string>(live.flatMap((j) => referencedSecrets(j)));
    for (const j of live) {
      try {
        await o.client.request('DELETE', objectPath(resources.jobs, c.namespace, j.metadata.name), { signal, body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' } });
        writes.inc({ resource: 'jobs', verb: 'delete' });
      } catch (e) {
        if (!isApiError(e, 404)) throw e;
      }
    }
    for (const name of secretNames) {
      try {
        const s = await o.client.request<KubeObject>('GET', objectPath(resources.secrets, c.namespace, name), { signal });
        // Only Secrets made for this capture (the CLI's, from its flags); a user's own Secret stays.
        if (s.metadata.labels?.[CAPTURE_NAME_LABEL] !== c.name || s.metadata.labels?.[CAPTURE_APP_LABEL] !== CAPTURE_APP_VALUE) continue;
        await o.client.request('DELETE', objectPath(resources.secrets, c.namespace, name), { signal });
        writes.inc({ resource: 'secrets', verb: 'delete' });
      } catch (e) {
        if (isApiError(e, 404)) continue;
        if (isApiError(e, 403)) {
          log.warn('cannot delete a capture secret (no RBAC for secrets in this namespace: operator.captureSecretNamespaces)', { capture: `${c.namespace}/${c.name}`, secret: name });
          continue;
        }
        throw e;
      }
    }
  }

  async function missingSecret(c: SlimCapture, signal: AbortSignal): Promise<string | undefined> {
    const out = c.spec.outputConfiguration;
    const names = [out.blobUpload, out.s3Upload?.secretName].filter((x): x is string => Boolean(x));
    for (const name of names) {
      try {
        await o.client.request('GET', objectPath(resources.secrets, c.namespace, name), { signal });
      } catch (e) {
        if (isApiError(e, 404)) return name;
        if (isApiError(e, 403)) continue; // not allowed to look: the kubelet will say if it is missing
        throw e;
      }
    }
    return undefined;
  }

  async function fail(c: SlimCapture, reason: CaptureReason, message: string, signal: AbortSignal): Promise<void> {
    const now = new Date().toISOString();
    const conditions = [
      condition(c.status.conditions, CONDITION_COMPLETE, 'False', reason, message, c.generation, now),
      condition(c.status.conditions, CONDITION_ERROR, 'True', reason, message, c.generation, now),
    ];
    const prevError = c.status.conditions?.find((x) => x.type === CONDITION_ERROR);
    await patchStatus(c, { ...c.status, conditions }, signal);
    if (prevError?.status !== 'True' || prevError.message !== message) o.events.warning(target(c), reason, message);
    log.warn('capture cannot run', { capture: `${c.namespace}/${c.name}`, reason, message });
  }

  /** ServiceAccount retina-capture and its RoleBinding to the pods' ClusterRole, in the capture's namespace. */
  async function ensureAccount(namespace: string, role: string, signal: AbortSignal): Promise<void> {
    const labels = { [CAPTURE_APP_LABEL]: CAPTURE_APP_VALUE };
    const create = async (path: string, body: unknown, what: string): Promise<void> => {
      try {
        await o.client.request('POST', path, { signal, body });
        writes.inc({ resource: what, verb: 'create' });
      } catch (e) {
        if (!isApiError(e, 409)) throw e;
      }
    };
    await create(collectionPath(SERVICE_ACCOUNTS, namespace), { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: CAPTURE_SERVICE_ACCOUNT, namespace, labels } }, 'serviceaccounts');
    await create(collectionPath(ROLE_BINDINGS, namespace), {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: CAPTURE_SERVICE_ACCOUNT, namespace, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: CAPTURE_SERVICE_ACCOUNT, namespace }],
    }, 'rolebindings');
  }

  async function createJobs(c: SlimCapture, signal: AbortSignal): Promise<ReconcileResult> {
    let nodes;
    try {
      nodes = await resolveTargets(o.client, c.namespace, c.spec, signal);
    } catch (e) {
      if (!(e instanceof TargetError)) throw e;
      await fail(c, 'OtherError', `${e.message}; retrying`, signal);
      return retryLater(c);
    }
    const startTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    let manifests;
    try {
      manifests = captureJobs(c, nodes, {
        linuxImage: o.linuxImage, windowsImage: o.windowsImage, hostPathBaseDir: o.hostPathBaseDir, jobNumLimit: o.jobNumLimit, startTimestamp,
        deadlineSlackSeconds: Math.ceil(o.deadlineSlackMs / 1000),
        ...(o.podClusterRole ? { serviceAccountName: CAPTURE_SERVICE_ACCOUNT } : {}),
        owner: { apiVersion: apiVersionOf(resources.captures), kind: 'Capture', name: c.name, uid: c.uid },
      });
    } catch (e) {
      if (!(e instanceof JobNumLimitError) && !(e instanceof TriggerOnWindowsError)) throw e;
      await fail(c, e instanceof JobNumLimitError ? 'ExceedJobNumLimit' : 'OtherError', e.message, signal);
      return 'success';
    }
    // As Retina: one capture at a time on a Windows node (a single trace session per host).
    const busy = nodes.filter((n) => n.os === 'windows' && jobs.list().some((j) => j.node === n.name && running(j) && !(j.namespace === c.namespace && j.capture === c.name)));
    if (busy.length) {
      await fail(c, 'OtherError', `Windows node(s) ${busy.map((n) => n.name).join(', ')} already run a capture (one at a time per Windows node); retrying`, signal);
      return retryLater(c, busy.map((n) => n.name));
    }
    const missing = await missingSecret(c, signal);
    if (missing) {
      await fail(c, 'FindSecretFailed', `secret ${c.namespace}/${missing} (outputConfiguration) does not exist; retrying`, signal);
      return retryLater(c);
    }
    if (o.podClusterRole) {
      try {
        await ensureAccount(c.namespace, o.podClusterRole, signal);
      } catch (e) {
        await fail(c, 'OtherError', `creating ServiceAccount ${CAPTURE_SERVICE_ACCOUNT} and its RoleBinding: ${(e as Error).message}`, signal);
        throw e;
      }
    }
    waiting.delete(`${c.namespace}/${c.name}`);
    const have = new Set((await liveJobs(c, signal)).map((j) => j.spec?.template?.spec?.nodeName));
    let created = 0;
    for (const m of manifests) {
      const node = ((m['spec'] as { template: { spec: { nodeName: string } } }).template.spec.nodeName);
      if (have.has(node)) continue;
      try {
        await o.client.request('POST', collectionPath(resources.jobs, c.namespace), { signal, body: m });
        writes.inc({ resource: 'jobs', verb: 'create' });
        created++;
      } catch (e) {
        await fail(c, 'CreateJobFailed', `creating the Job for node ${node}: ${(e as Error).message}`, signal);
        throw e;
      }
    }
    const own = jobsOf(c);
    if (!created && own.length === manifests.length) {
      // Every Job was there (an operator restarted between creating them and writing the status): the
      // status is what they and their pods say now, not "all in progress" beside the old counts.
      log.info('capture jobs found, none created', { capture: `${c.namespace}/${c.name}`, jobs: manifests.length });
      return settle({ ...c, status: { ...c.status, startTime: startTimestamp } }, own, signal);
    }
    const now = new Date().toISOString();
    const msg = `${manifests.length} capture job(s) in progress`;
    await patchStatus(c, {
      ...c.status, startTime: startTimestamp, active: manifests.length, succeeded: 0, failed: 0,
      conditions: [condition(undefined, CONDITION_COMPLETE, 'False', 'JobsInProgress', msg, c.generation, now)],
    }, signal);
    if (created) o.events.normal(target(c), 'JobsCreated', `${created} capture job(s) created on ${nodes.filter((n) => !have.has(n.name)).map((n) => n.name).join(', ')}`);
    log.info('capture jobs created', { capture: `${c.namespace}/${c.name}`, jobs: manifests.length, created });
    return 'success';
  }

  /** The status that the Jobs and Pods in the stores say. */
  const aggregate = (c: SlimCapture, own: readonly SlimJob[]): CaptureStatus => captureStatus(c, own, pods.list(), new Date().toISOString());

  async function reconcile(key: string, signal: AbortSignal): Promise<ReconcileResult> {
    if (!captures.synced || !jobs.synced || !pods.synced) return { requeueAfterMs: 500 };
    const c = captures.get(key);
    if (!c) {
      waiting.delete(key);
      return 'success'; // gone: its Jobs follow through their ownerReferences
    }
    if (c.deleting) {
      if (!c.finalizers.includes(CAPTURE_FINALIZER)) return 'success';
      await cleanUp(c, signal);
      const i = c.finalizers.indexOf(CAPTURE_FINALIZER);
      try {
        await o.client.request('PATCH', capturePath(c), {
          signal, contentType: 'application/json-patch+json',
          body: [{ op: 'test', path: `/metadata/finalizers/${i}`, value: CAPTURE_FINALIZER }, { op: 'remove', path: `/metadata/finalizers/${i}` }],
        });
      } catch (e) {
        if (isApiError(e, 404)) return 'success'; // already gone (a stale store after our own removal)
        throw e;
      }
      writes.inc({ resource: 'captures', verb: 'patch' });
      log.info('capture deleted: jobs and secrets cleaned up', { capture: key });
      return 'success';
    }
    if (!c.finalizers.includes(CAPTURE_FINALIZER)) {
      await o.client.request('PATCH', capturePath(c), { signal, contentType: 'application/merge-patch+json', body: { metadata: { finalizers: [...c.finalizers, CAPTURE_FINALIZER], resourceVersion: undefined } } });
      writes.inc({ resource: 'captures', verb: 'patch' });
    }
    const errors = validateCaptureSpec(c.spec);
    if (errors.length) {
      await fail(c, 'OtherError', `invalid Capture: ${errors.join('; ')}`, signal);
      return 'success';
    }
    const own = jobsOf(c);
    if (!c.status.startTime) return createJobs(c, signal);
    if (!own.length) {
      // Jobs created and since removed (cleanUpAfterUpload, or by hand): the status stays as it was.
      return 'success';
    }
    return settle(c, own, signal);
  }

  /** Writes the status that the capture's Jobs and their pods say; once they are done, says so and cleans up as asked. */
  async function settle(c: SlimCapture, own: readonly SlimJob[], signal: AbortSignal): Promise<ReconcileResult> {
    const { namespace, name } = c;
    const status = aggregate(c, own);
    const wasDone = Boolean(c.status.completionTime);
    // Written first: the clean-up below deletes the Jobs this status is made from, and a capture whose Jobs are
    // gone keeps the status it has (a lost write here left one "in progress" for good, its Jobs deleted).
    if (!(await patchStatus(c, status, signal))) return 'success';
    if (status.completionTime && !wasDone) {
      if ((status.failed ?? 0) > 0) o.events.warning(target(c), 'RunJobFailed', status.conditions?.find((x) => x.type === CONDITION_ERROR)?.message ?? 'capture jobs failed');
      else o.events.normal(target(c), 'JobsCompleted', `${status.succeeded} capture job(s) succeeded`);
      log.info('capture finished', { capture: `${namespace}/${name}`, succeeded: status.succeeded, failed: status.failed });
    }
    if (status.completionTime && c.spec.cleanUpAfterUpload && (status.failed ?? 0) === 0) {
      await cleanUp(c, signal);
      o.events.normal(target(c), 'CleanedUp', 'capture jobs and secrets deleted (cleanUpAfterUpload)');
    }
    return 'success';
  }

  const controller = createController({ name: 'capture', reconcile, workers: o.workers ?? 4, qps: 10, burst: 50, metrics: o.metrics, log });
  const enqueue = (k: string): void => controller.queue.add(k);
  const byCapture = (ns: string, capture: string): void => {
    if (capture) enqueue(`${ns}/${capture}`);
  };
  captures.subscribe({ added: enqueue, updated: enqueue, deleted: enqueue });
  // A capture Job or pod that changes on a node may free it for a capture waiting for that Windows node: retry those now.
  const wakeWaiting = (node: string): void => {
    for (const [k, w] of waiting) if (w.nodes.has(node)) enqueue(k);
  };
  const onJob = (_k: string, j: SlimJob): void => {
    byCapture(j.namespace, j.capture);
    wakeWaiting(j.node);
  };
  jobs.subscribe({ added: onJob, updated: onJob, deleted: onJob });
  const onPod = (_k: string, p: SlimPod): void => {
    const j = jobs.get(`${p.namespace}/${p.job}`);
    if (!j) return; // its Job's own event follows
    byCapture(j.namespace, j.capture);
    wakeWaiting(j.node);
  };
  pods.subscribe({ added: onPod, updated: onPod, deleted: onPod });
  return {
    ...controller,
    enqueueAll() {
      for (const k of captures.keys()) enqueue(k);
    },
  };
}
