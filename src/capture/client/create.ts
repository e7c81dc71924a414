/**
 * Creating a capture from kubectl-retina, as Retina's CLI does: without the operator, the Jobs (one
 * per target node, from the operator's translator, job.ts) and the Secrets its flags need; with it, a
 * Capture resource the operator runs. Then, when asked, waiting for the capture to end and cleaning up.
 */
import { apiVersionOf, collectionPath, isApiError, objectPath, resources, type Capture, type CaptureCondition, type CaptureSpec, type CaptureStatus, type KubeList, type RestClient } from '../../k8s/index.js';
import { CAPTURE_SERVICE_ACCOUNT, JobNumLimitError, TriggerOnWindowsError, captureJobs, captureSecrets, captureSelector, type Manifest, type NodeOs, type SecretValues } from '../job.js';
import { TargetError, resolveTargets } from '../targets.js';
import { captureImages, type CaptureImages, type ImageChoice } from './images.js';
import { deleteCaptureJobs, jobProgress, type CaptureProgress } from './jobs.js';

export interface CaptureRequest {
  readonly name: string;
  readonly namespace: string;
  readonly spec: CaptureSpec;
  /** The SAS URL and S3 keys, made into the Secrets the spec names. */
  readonly secrets: SecretValues;
}

/** Creates the Secrets the capture's outputs need; returns their names. */
async function createCaptureSecrets(client: RestClient, r: CaptureRequest): Promise<string[]> {
  const s = captureSecrets(r.name, r.namespace, r.secrets);
  const made: string[] = [];
  for (const m of [s.blob, s.s3].filter((x): x is Manifest => x !== undefined)) {
    await client.request('POST', collectionPath(resources.secrets, r.namespace), { body: m });
    made.push(m.metadata.name as string);
  }
  return made;
}

/** The operator's way: the Secrets, then the Capture resource; returns the Secrets' names. */
export async function createCaptureResource(client: RestClient, r: CaptureRequest): Promise<string[]> {
  const made = await createCaptureSecrets(client, r);
  const body: Capture = { apiVersion: apiVersionOf(resources.captures), kind: 'Capture', metadata: { name: r.name, namespace: r.namespace }, spec: r.spec };
  await client.request('POST', collectionPath(resources.captures, r.namespace), { body });
  return made;
}

export interface JobsRequest extends CaptureRequest {
  /** Nodes named one by one (--node-names): each must exist. */
  readonly nodeNames: readonly string[];
  readonly images: ImageChoice;
  /** kubectl-retina's version: the default image's tag. */
  readonly version: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly hostPathBaseDir: string;
  /** 0: no limit. */
  readonly jobNumLimit: number;
}

/** What happens on the way, before anything is created. */
export interface JobsEvents {
  /** The capture images chosen, and the OSes of the target nodes. */
  images(images: CaptureImages, oses: ReadonlySet<NodeOs>): void;
  /** The namespace has no capture ServiceAccount (its pods cannot annotate themselves with their file's name). */
  noServiceAccount(namespace: string): void;
}

export type JobsResult =
  | { readonly kind: 'created'; readonly jobs: readonly string[]; readonly secrets: readonly string[] }
  /** The capture already has Jobs: nothing was created. */
  | { readonly kind: 'exists' }
  /** Nodes named in nodeNames that do not exist: nothing was created. */
  | { readonly kind: 'no-such-nodes'; readonly nodes: readonly string[] }
  /** No target node, or more Jobs than the limit (the message says which): nothing was created. */
  | { readonly kind: 'refused'; readonly message: string };

/** The CLI's way (no operator): resolves the target nodes and creates the Secrets and one Job per node. */
export async function createCaptureJobs(client: RestClient, r: JobsRequest, events: JobsEvents): Promise<JobsResult> {
  const ns = r.namespace;
  const existing = await client.request<KubeList<unknown>>('GET', collectionPath(resources.jobs, ns), { query: { labelSelector: captureSelector(r.name), limit: 1 } });
  if (existing.items.length) return { kind: 'exists' };
  let nodes;
  try {
    nodes = await resolveTargets(client, ns, r.spec);
  } catch (e) {
    if (!(e instanceof TargetError)) throw e;
    return { kind: 'refused', message: e.message };
  }
  if (r.nodeNames.length) {
    const found = new Set(nodes.map((n) => n.name));
    const missing = r.nodeNames.filter((n) => !found.has(n));
    if (missing.length) return { kind: 'no-such-nodes', nodes: missing };
  }
  const images = await captureImages(client, r.images, r.version, r.env);
  events.images(images, new Set(nodes.map((n) => n.os)));
  const account = await captureAccount(client, ns);
  if (!account) events.noServiceAccount(ns);
  let jobs: Manifest[];
  try {
    jobs = captureJobs({ name: r.name, namespace: ns, spec: r.spec }, nodes, {
      linuxImage: images.linuxImage, windowsImage: images.windowsImage, hostPathBaseDir: r.hostPathBaseDir, jobNumLimit: r.jobNumLimit, deadlineSlackSeconds: 300,
      ...(account ? { serviceAccountName: account } : {}),
      startTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    });
  } catch (e) {
    if (!(e instanceof JobNumLimitError) && !(e instanceof TriggerOnWindowsError)) throw e;
    return { kind: 'refused', message: e.message };
  }
  const secrets = await createCaptureSecrets(client, r);
  const created: string[] = [];
  for (const j of jobs) {
    const made = await client.request<{ metadata: { name: string } }>('POST', collectionPath(resources.jobs, ns), { body: j });
    created.push(made.metadata.name);
  }
  return { kind: 'created', jobs: created, secrets };
}

/** The capture ServiceAccount if the namespace has it (and we may see it); undefined otherwise. */
async function captureAccount(client: RestClient, ns: string): Promise<string | undefined> {
  try {
    await client.request('GET', `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/${CAPTURE_SERVICE_ACCOUNT}`);
    return CAPTURE_SERVICE_ACCOUNT;
  } catch (e) {
    if (isApiError(e, 404) || isApiError(e, 403)) return undefined;
    throw e;
  }
}

export interface WaitOptions {
  /** The capture's duration: the wait gives up 5 minutes after it. */
  readonly durationMs: number;
  readonly everyMs: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls the capture's Jobs until none is active (or the duration + 5 m passes), then deletes them and their Secrets. */
export async function waitForJobs(client: RestClient, ns: string, name: string, o: WaitOptions & { onProgress(p: CaptureProgress): void }): Promise<{ timedOut: boolean; failed: number; removed: { jobs: number; secrets: number } }> {
  const deadline = Date.now() + o.durationMs + 300_000;
  for (;;) {
    const p = await jobProgress(client, ns, name);
    o.onProgress(p);
    if (p.active === 0 || Date.now() > deadline) {
      const timedOut = p.active > 0;
      return { timedOut, failed: p.failed, removed: await deleteCaptureJobs(client, ns, name) };
    }
    await sleep(o.everyMs);
  }
}

/**
 * Polls the Capture's status until it completes, fails before it started, or the duration + 5 m
 * passes; then deletes it (the operator cleans up). `error` is its error condition, if any.
 */
export async function waitForCaptureResource(client: RestClient, ns: string, name: string, o: WaitOptions & { onStatus(s: CaptureStatus): void }): Promise<{ error: CaptureCondition | undefined; completed: boolean }> {
  const deadline = Date.now() + o.durationMs + 300_000;
  for (;;) {
    const c = await client.request<Capture>('GET', objectPath(resources.captures, ns, name));
    const s = c.status ?? {};
    o.onStatus(s);
    const error = s.conditions?.find((x) => x.type === 'error' && x.status === 'True');
    if (s.completionTime || (error && !s.startTime) || Date.now() > deadline) {
      await client.request('DELETE', objectPath(resources.captures, ns, name));
      return { error, completed: Boolean(s.completionTime) };
    }
    await sleep(o.everyMs);
  }
}
