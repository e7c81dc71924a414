/**
 * A Capture, its Jobs and their Pods as the capture controller keeps them (slim, from its
 * informers), and the Capture status they add up to (Retina's conditions and reasons): pure, so a
 * reconcile writes the status only when this differs from what the Capture holds.
 */
import type { CaptureCondition, CaptureNodeState, CaptureSpec, CaptureStatus, Capture, KubeObject } from '../k8s/index.js';
import { CAPTURE_NAME_LABEL, FILENAME_ANNOTATION, referencedSecrets } from '../capture/index.js';

/** Retina's condition types and reasons (crd/api/v1alpha1/capture_types.go). */
export const CONDITION_COMPLETE = 'complete';
export const CONDITION_ERROR = 'error';
export type CaptureReason = 'JobsInProgress' | 'JobsCompleted' | 'ExceedJobNumLimit' | 'FindSecretFailed' | 'CreateJobFailed' | 'CreateSecretFailed' | 'RunJobFailed' | 'OtherError';

export interface SlimCapture {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly generation: number;
  /** A status write carries it: one made from a stale cached copy gets 409, not the last word. */
  readonly resourceVersion: string;
  readonly deleting: boolean;
  readonly finalizers: readonly string[];
  readonly spec: CaptureSpec;
  readonly status: CaptureStatus;
}

export interface JobWire extends KubeObject {
  spec?: { template?: { spec?: { nodeName?: string; volumes?: { secret?: { secretName?: string } }[] } } };
  status?: { active?: number; succeeded?: number; failed?: number; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

export interface SlimJob {
  readonly namespace: string;
  readonly name: string;
  readonly capture: string;
  readonly node: string;
  readonly done: 'Completed' | 'Failed' | undefined;
  readonly message: string | undefined;
  readonly secrets: readonly string[];
}

export interface PodWire extends KubeObject {
  status?: { phase?: string; containerStatuses?: { state?: { terminated?: { message?: string } } }[] };
}

export interface SlimPod {
  readonly namespace: string;
  readonly job: string;
  readonly phase: string;
  readonly file: string | undefined;
  readonly message: string | undefined;
}

export const slimCapture = (c: Capture): SlimCapture => ({
  namespace: c.metadata.namespace ?? 'default', name: c.metadata.name, uid: c.metadata.uid ?? '', generation: c.metadata.generation ?? 0, resourceVersion: c.metadata.resourceVersion ?? '',
  deleting: Boolean(c.metadata.deletionTimestamp), finalizers: c.metadata.finalizers ?? [], spec: c.spec, status: c.status ?? {},
});

export const slimJob = (j: JobWire): SlimJob => ({
  namespace: j.metadata.namespace ?? '', name: j.metadata.name, capture: j.metadata.labels?.[CAPTURE_NAME_LABEL] ?? '',
  node: j.spec?.template?.spec?.nodeName ?? '', ...jobDone(j), secrets: referencedSecrets(j),
});

export const slimPod = (p: PodWire): SlimPod => ({
  namespace: p.metadata.namespace ?? '', job: p.metadata.labels?.['job-name'] ?? p.metadata.ownerReferences?.find((r) => r.kind === 'Job')?.name ?? '',
  phase: p.status?.phase ?? 'Pending', file: p.metadata.annotations?.[FILENAME_ANNOTATION],
  message: p.status?.containerStatuses?.map((c) => c.state?.terminated?.message).find((m) => m)?.trim(),
});

function jobDone(j: JobWire): { done: SlimJob['done']; message: string | undefined } {
  const cond = (t: string): { message?: string; reason?: string } | undefined => j.status?.conditions?.find((c) => c.type === t && c.status === 'True');
  const failed = cond('Failed') ?? cond('FailureTarget');
  if (failed) return { done: 'Failed', message: [failed.reason, failed.message].filter(Boolean).join(': ') || 'the Job failed' };
  if (cond('Complete') ?? cond('SuccessCriteriaMet')) return { done: 'Completed', message: undefined };
  if ((j.status?.succeeded ?? 0) > 0) return { done: 'Completed', message: undefined };
  if ((j.status?.failed ?? 0) > 0) return { done: 'Failed', message: 'the capture pod failed' };
  return { done: undefined, message: undefined };
}

/** Keeps lastTransitionTime of a condition whose status did not change. */
export function condition(prev: readonly CaptureCondition[] | undefined, type: string, status: CaptureCondition['status'], reason: CaptureReason, message: string, generation: number, now: string): CaptureCondition {
  const old = prev?.find((c) => c.type === type);
  const lastTransitionTime = old && old.status === status ? old.lastTransitionTime : now;
  return { type, status, reason, message: message.slice(0, 32768), observedGeneration: generation, lastTransitionTime };
}

/** The status that a Capture's own Jobs and the capture Pods say, at `now` (ISO time). */
export function captureStatus(c: SlimCapture, own: readonly SlimJob[], pods: readonly SlimPod[], now: string): CaptureStatus {
  const podsOf = new Map<string, SlimPod>();
  for (const p of pods) if (p.namespace === c.namespace && p.job) podsOf.set(p.job, p);
  const nodes = own.map((j) => {
    const p = podsOf.get(j.name);
    const state: CaptureNodeState = j.done ?? (p?.phase === 'Running' ? 'Running' : p?.phase === 'Succeeded' ? 'Completed' : p?.phase === 'Failed' ? 'Failed' : 'Pending');
    const message = state === 'Failed' ? (p?.message || j.message) : undefined;
    return { name: j.node, job: j.name, state, ...(p?.file ? { file: p.file } : {}), ...(message ? { message: message.slice(0, 4096) } : {}) };
  }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const count = (s: CaptureNodeState): number => nodes.filter((n) => n.state === s).length;
  const nodeCounts = { pending: count('Pending'), running: count('Running'), completed: count('Completed'), failed: count('Failed'), uploaded: nodes.filter((n) => n.file).length };
  const active = nodeCounts.pending + nodeCounts.running;
  const conditions: CaptureCondition[] = [];
  let completionTime = c.status.completionTime;
  if (active > 0) {
    conditions.push(condition(c.status.conditions, CONDITION_COMPLETE, 'False', 'JobsInProgress', `${active} of ${nodes.length} capture job(s) in progress`, c.generation, now));
  } else {
    completionTime ??= now;
    conditions.push(condition(c.status.conditions, CONDITION_COMPLETE, 'True', 'JobsCompleted', `${nodeCounts.completed} of ${nodes.length} capture job(s) succeeded`, c.generation, now));
    if (nodeCounts.failed > 0) {
      const which = nodes.filter((n) => n.state === 'Failed').map((n) => `${n.name}${n.message ? ` (${n.message})` : ''}`).join('; ');
      conditions.push(condition(c.status.conditions, CONDITION_ERROR, 'True', 'RunJobFailed', `${nodeCounts.failed} capture job(s) failed: ${which}`, c.generation, now));
    }
  }
  const status: CaptureStatus = { startTime: c.status.startTime, active, succeeded: nodeCounts.completed, failed: nodeCounts.failed, nodeCounts, nodes, conditions };
  if (completionTime) status.completionTime = completionTime;
  return status;
}
