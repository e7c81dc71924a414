/**
 * The captures in the cluster as kubectl-retina sees them: their Jobs (label retina.sh/app=capture,
 * grouped by capture-name) and Capture resources, each capture's per-node progress, and deleting a
 * capture (its Capture resource, whose finalizer the operator runs, else its Jobs and the Secrets
 * made for it, as Retina's CLI does).
 */
import { collectionPath, isApiError, objectPath, resources, type Capture, type KubeList, type KubeObject, type RestClient } from '../../k8s/index.js';
import { CAPTURE_APP_LABEL, CAPTURE_APP_VALUE, CAPTURE_NAME_LABEL, captureSelector, referencedSecrets } from '../job.js';

export interface JobWire extends KubeObject {
  spec?: { template?: { spec?: { nodeName?: string; volumes?: { secret?: { secretName?: string } }[] } } };
  status?: { active?: number; succeeded?: number; failed?: number; conditions?: { type: string; status: string }[] };
}

export type JobState = 'Running' | 'Completed' | 'Failed';

/** One capture's Jobs, by node. */
export interface CaptureProgress {
  readonly name: string;
  readonly namespace: string;
  readonly jobs: number;
  readonly active: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly nodes: { node: string; job: string; state: JobState }[];
}

export function jobState(j: JobWire): JobState {
  const c = (t: string): boolean => Boolean(j.status?.conditions?.some((x) => x.type === t && x.status === 'True'));
  if (c('Failed') || c('FailureTarget') || (j.status?.failed ?? 0) > 0) return 'Failed';
  if (c('Complete') || c('SuccessCriteriaMet') || (j.status?.succeeded ?? 0) > 0) return 'Completed';
  return 'Running';
}

export function progressOf(namespace: string, name: string, jobs: readonly JobWire[]): CaptureProgress {
  const nodes = jobs.map((j) => ({ node: j.spec?.template?.spec?.nodeName ?? '', job: j.metadata.name, state: jobState(j) })).sort((a, b) => (a.node < b.node ? -1 : 1));
  const n = (s: string): number => nodes.filter((x) => x.state === s).length;
  return { name, namespace, jobs: nodes.length, active: n('Running'), succeeded: n('Completed'), failed: n('Failed'), nodes };
}

/** The Jobs of one capture, or of every capture (no name), in one namespace or all (undefined). */
export async function listCaptureJobs(client: RestClient, ns: string | undefined, name?: string): Promise<JobWire[]> {
  const l = await client.request<KubeList<JobWire>>('GET', collectionPath(resources.jobs, ns), { query: { labelSelector: captureSelector(name) } });
  return l.items;
}

export async function jobProgress(client: RestClient, ns: string, name: string): Promise<CaptureProgress> {
  return progressOf(ns, name, await listCaptureJobs(client, ns, name));
}

/** Deletes the capture's Jobs (pods with them) and the Secrets its Jobs mount that were made for it. */
export async function deleteCaptureJobs(client: RestClient, ns: string, name: string): Promise<{ jobs: number; secrets: number }> {
  const jobs = await listCaptureJobs(client, ns, name);
  const secretNames = new Set(jobs.flatMap((j) => referencedSecrets(j)));
  // Secrets made for the capture even when no Job was created (a failed create).
  const own = await client.request<KubeList<KubeObject>>('GET', collectionPath(resources.secrets, ns), { query: { labelSelector: captureSelector(name) } }).catch(() => ({ items: [] as KubeObject[] }));
  for (const s of own.items) secretNames.add(s.metadata.name);
  let nj = 0;
  for (const j of jobs) {
    try {
      await client.request('DELETE', objectPath(resources.jobs, ns, j.metadata.name), { body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' } });
      nj++;
    } catch (e) {
      if (!isApiError(e, 404)) throw e;
    }
  }
  let ns2 = 0;
  for (const s of secretNames) {
    try {
      const sec = await client.request<KubeObject>('GET', objectPath(resources.secrets, ns, s));
      if (sec.metadata.labels?.[CAPTURE_APP_LABEL] !== CAPTURE_APP_VALUE || sec.metadata.labels?.[CAPTURE_NAME_LABEL] !== name) continue;
      await client.request('DELETE', objectPath(resources.secrets, ns, s));
      ns2++;
    } catch (e) {
      if (!isApiError(e, 404)) throw e;
    }
  }
  return { jobs: nj, secrets: ns2 };
}

/** What `delete` did: the Capture resource deleted (the operator removes the rest), or the Jobs and Secrets themselves. */
export type DeleteOutcome = { readonly kind: 'resource' } | { readonly kind: 'jobs'; readonly jobs: number; readonly secrets: number };

/** Deletes the Capture resource when there is one (and we may), else the capture's Jobs and Secrets. */
export async function deleteCapture(client: RestClient, ns: string, name: string): Promise<DeleteOutcome> {
  try {
    await client.request('DELETE', objectPath(resources.captures, ns, name));
    return { kind: 'resource' };
  } catch (e) {
    if (!isApiError(e, 404) && !isApiError(e, 403)) throw e;
  }
  return { kind: 'jobs', ...(await deleteCaptureJobs(client, ns, name)) };
}

/** One capture, from its Capture resource (with its Jobs' counts where the status has none) or from its Jobs alone. */
export interface CaptureSummary {
  readonly namespace: string;
  readonly name: string;
  readonly kind: 'Capture' | 'Jobs';
  readonly jobs: number;
  readonly active: number;
  readonly succeeded: number;
  readonly failed: number;
  /** The Capture's error or complete reason (Pending before either); JobsInProgress | JobsCompleted for Jobs alone. */
  readonly state: string;
  readonly nodes: readonly string[];
}

/** The captures of a namespace (or all: undefined), sorted by namespace/name. */
export async function listCaptures(client: RestClient, ns: string | undefined): Promise<CaptureSummary[]> {
  const groups = new Map<string, JobWire[]>();
  for (const j of await listCaptureJobs(client, ns)) {
    const k = `${j.metadata.namespace ?? ''}/${j.metadata.labels?.[CAPTURE_NAME_LABEL] ?? ''}`;
    groups.set(k, [...(groups.get(k) ?? []), j]);
  }
  let crs: Capture[] = [];
  try {
    crs = (await client.request<KubeList<Capture>>('GET', collectionPath(resources.captures, ns))).items;
  } catch (e) {
    if (!isApiError(e, 404) && !isApiError(e, 403)) throw e; // no CRD (no operator) or not allowed: Jobs only
  }
  const out: CaptureSummary[] = [];
  const seen = new Set<string>();
  for (const c of crs) {
    const k = `${c.metadata.namespace}/${c.metadata.name}`;
    seen.add(k);
    const s = c.status ?? {};
    const p = progressOf(c.metadata.namespace ?? '', c.metadata.name, groups.get(k) ?? []);
    const state = s.conditions?.find((x) => x.type === 'error' && x.status === 'True')?.reason ?? s.conditions?.find((x) => x.type === 'complete')?.reason ?? 'Pending';
    const fromStatus = (s.nodes ?? []).map((n) => n.name);
    out.push({
      namespace: c.metadata.namespace ?? '', name: c.metadata.name, kind: 'Capture', jobs: s.nodes?.length ?? p.jobs, active: s.active ?? p.active,
      succeeded: s.succeeded ?? p.succeeded, failed: s.failed ?? p.failed, state, nodes: fromStatus.join(',') ? fromStatus : p.nodes.map((n) => n.node),
    });
  }
  for (const [k, js] of groups) {
    if (seen.has(k)) continue;
    const [n, name] = [k.slice(0, k.indexOf('/')), k.slice(k.indexOf('/') + 1)];
    const p = progressOf(n, name, js);
    out.push({
      namespace: n, name, kind: 'Jobs', jobs: p.jobs, active: p.active, succeeded: p.succeeded, failed: p.failed,
      state: p.active ? 'JobsInProgress' : 'JobsCompleted', nodes: p.nodes.map((x) => x.node),
    });
  }
  return out.sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
}
