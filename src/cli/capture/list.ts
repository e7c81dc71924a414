/**
 * `kubectl-retina capture list [-A]`: the captures of a namespace (or all), from their Jobs (label
 * retina.sh/app=capture) and from Capture resources, with per-node progress. Also the Job-side helpers
 * create and delete share: progress of one capture, and deleting its Jobs and own Secrets.
 */
import { CAPTURE_APP_LABEL, CAPTURE_APP_VALUE, CAPTURE_NAME_LABEL, captureSelector, referencedSecrets } from '../../capture/index.js';
import { collectionPath, isApiError, objectPath, resources, type Capture, type KubeList, type KubeObject, type RestClient } from '../../k8s/index.js';
import { parseFlags, UsageError } from '../args.js';
import { withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { connect } from './flags.js';

export interface JobWire extends KubeObject {
  spec?: { template?: { spec?: { nodeName?: string; volumes?: { secret?: { secretName?: string } }[] } } };
  status?: { active?: number; succeeded?: number; failed?: number; conditions?: { type: string; status: string }[] };
}

export interface Progress {
  readonly name: string;
  readonly namespace: string;
  readonly jobs: number;
  readonly active: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly nodes: { node: string; job: string; state: 'Running' | 'Completed' | 'Failed' }[];
}

export function jobState(j: JobWire): 'Running' | 'Completed' | 'Failed' {
  const c = (t: string): boolean => Boolean(j.status?.conditions?.some((x) => x.type === t && x.status === 'True'));
  if (c('Failed') || c('FailureTarget') || (j.status?.failed ?? 0) > 0) return 'Failed';
  if (c('Complete') || c('SuccessCriteriaMet') || (j.status?.succeeded ?? 0) > 0) return 'Completed';
  return 'Running';
}

export function progressOf(namespace: string, name: string, jobs: readonly JobWire[]): Progress {
  const nodes = jobs.map((j) => ({ node: j.spec?.template?.spec?.nodeName ?? '', job: j.metadata.name, state: jobState(j) })).sort((a, b) => (a.node < b.node ? -1 : 1));
  const n = (s: string): number => nodes.filter((x) => x.state === s).length;
  return { name, namespace, jobs: nodes.length, active: n('Running'), succeeded: n('Completed'), failed: n('Failed'), nodes };
}

export async function captureJobsLive(client: RestClient, ns: string | undefined, name?: string): Promise<JobWire[]> {
  const l = await client.request<KubeList<JobWire>>('GET', collectionPath(resources.jobs, ns), { query: { labelSelector: captureSelector(name) } });
  return l.items;
}

export async function jobProgress(client: RestClient, ns: string, name: string): Promise<Progress> {
  return progressOf(ns, name, await captureJobsLive(client, ns, name));
}

export function printProgress(p: Progress): string {
  return `${p.name}: ${p.nodes.map((x) => `${x.node}=${x.state}`).join(' ')} (running ${p.active}, completed ${p.succeeded}, failed ${p.failed})`;
}

/** Deletes the capture's Jobs (pods with them) and the Secrets its Jobs mount that were made for it. */
export async function deleteCaptureJobs(client: RestClient, ns: string, name: string): Promise<{ jobs: number; secrets: number }> {
  const jobs = await captureJobsLive(client, ns, name);
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

export const LIST_USAGE = 'usage: kubectl-retina capture list [-n NAMESPACE | -A/--all-namespaces] [kubectl\'s flags: kubectl-retina options]';

export async function runList(argv: readonly string[], env: NodeJS.ProcessEnv, kubeFlags: KubeFlags = {}): Promise<number> {
  let f;
  let kubeArgs: KubeFlags;
  try {
    const split = withKubeFlags(argv, kubeFlags);
    kubeArgs = split.kube;
    f = parseFlags(split.rest, { strings: {}, booleans: { 'all-namespaces': false, help: false }, short: { A: 'all-namespaces', h: 'help' } });
  } catch (e) {
    process.stderr.write(`kubectl-retina capture list: ${(e as UsageError).message}\n${LIST_USAGE}\n`);
    return 2;
  }
  if (f.bool('help')) {
    process.stdout.write(LIST_USAGE + '\n');
    return 0;
  }
  const kube = await connect(kubeArgs, env, 'capture list');
  if (!kube) return 1;
  const ns = f.bool('all-namespaces') ? undefined : kube.namespace;
  const client = kube.client();
  try {
    const jobs = await captureJobsLive(client, ns);
    const groups = new Map<string, JobWire[]>();
    for (const j of jobs) {
      const k = `${j.metadata.namespace ?? ''}/${j.metadata.labels?.[CAPTURE_NAME_LABEL] ?? ''}`;
      groups.set(k, [...(groups.get(k) ?? []), j]);
    }
    const rows: string[][] = [];
    let crs: Capture[] = [];
    try {
      crs = (await client.request<KubeList<Capture>>('GET', collectionPath(resources.captures, ns))).items;
    } catch (e) {
      if (!isApiError(e, 404) && !isApiError(e, 403)) throw e; // no CRD (no operator) or not allowed: Jobs only
    }
    const seen = new Set<string>();
    for (const c of crs) {
      const k = `${c.metadata.namespace}/${c.metadata.name}`;
      seen.add(k);
      const s = c.status ?? {};
      const p = progressOf(c.metadata.namespace ?? '', c.metadata.name, groups.get(k) ?? []);
      const state = s.conditions?.find((x) => x.type === 'error' && x.status === 'True')?.reason ?? s.conditions?.find((x) => x.type === 'complete')?.reason ?? 'Pending';
      rows.push([c.metadata.namespace ?? '', c.metadata.name, 'Capture', String(s.nodes?.length ?? p.jobs), String(s.active ?? p.active), String(s.succeeded ?? p.succeeded), String(s.failed ?? p.failed), state, (s.nodes ?? []).map((n) => n.name).join(',') || p.nodes.map((n) => n.node).join(',')]);
    }
    for (const [k, js] of groups) {
      if (seen.has(k)) continue;
      const [n, name] = [k.slice(0, k.indexOf('/')), k.slice(k.indexOf('/') + 1)];
      const p = progressOf(n, name, js);
      rows.push([n, name, 'Jobs', String(p.jobs), String(p.active), String(p.succeeded), String(p.failed), p.active ? 'JobsInProgress' : 'JobsCompleted', p.nodes.map((x) => x.node).join(',')]);
    }
    if (!rows.length) {
      process.stdout.write(`No captures found${ns ? ` in namespace ${ns}` : ''}.\n`);
      return 0;
    }
    rows.sort((a, b) => (`${a[0]}/${a[1]}` < `${b[0]}/${b[1]}` ? -1 : 1));
    const head = ['NAMESPACE', 'NAME', 'KIND', 'JOBS', 'ACTIVE', 'SUCCEEDED', 'FAILED', 'STATE', 'NODES'];
    const all = [head, ...rows];
    const w = head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
    process.stdout.write(all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i] as number))).join('  ')).join('\n') + '\n');
    return 0;
  } catch (e) {
    process.stderr.write(`kubectl-retina capture list: ${(e as Error).message}\n`);
    return 1;
  } finally {
    client.close();
  }
}
