/**
 * Captures against the real control plane (API server, kube-controller-manager's Job controller,
 * kwok running the Jobs' pods): the operator's Capture controller creates the right Jobs per target
 * (node selector, pods across namespaces, a Windows node), follows their pods into the status, fails
 * Jobs that overrun their deadline, honours the job limit, cleans up through its finalizer and after
 * upload, and never creates a Job twice across a restart. Then `kubectl-retina capture` end to end,
 * without and with the operator.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { collectionPath, isApiError, objectPath, resources, type Capture, type CaptureSpec, type KubeObject, type RestClient } from '../../src/k8s/index.js';
import { CAPTURE_FINALIZER } from '../../src/operator/index.js';
import { ROOT, deleteNamespace, eventually, listAll, startCluster, type Cluster } from './harness.js';
import { newClient, startOperator, uniqueId } from './operator-helpers.js';
import { one, render } from '../chart/helm.js';

const run = promisify(execFile);

interface Job extends KubeObject {
  spec: { activeDeadlineSeconds?: number; template: { spec: { nodeName: string; serviceAccountName?: string; securityContext?: { windowsOptions?: { hostProcess?: boolean } }; containers: { env: { name: string; value?: string }[] }[] } } };
}

describe('captures: operator and kubectl-retina against a real API server', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
  const id = uniqueId('cc');
  const ns = `${id}-a`;
  const nsB = `${id}-b`;
  const nsC = `${id}-c`;
  const lin = [`${id}-lin-0`, `${id}-lin-1`];
  const win = `${id}-win-0`;
  const dead = `${id}-dead-0`; // no kwok: its pods never run
  const deadWin = `${id}-deadwin-0`;
  const opEnv = { RETINA_ENABLELEADERELECTION: 'false', RETINA_CAPTUREDEADLINESLACK: '2s', RETINA_CAPTUREJOBNUMLIMIT: '3', RETINA_CAPTUREIMAGE: 'registry.invalid/cc:1' };

  const node = (name: string, labels: Record<string, string>, kwok: boolean): unknown => ({
    apiVersion: 'v1', kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'cc-test': id, ...labels }, annotations: kwok ? { 'kwok.x-k8s.io/node': 'fake' } : {} },
    status: { allocatable: { cpu: '100', memory: '100Gi', pods: '100' }, capacity: { cpu: '100', memory: '100Gi', pods: '100' } },
  });

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    for (const [n, team] of [[ns, true], [nsB, true], [nsC, false]] as const) {
      await client.request('POST', collectionPath(resources.namespaces), { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n, labels: team ? { 'cc-team': id } : {} } } });
    }
    for (const n of lin) await client.request('POST', collectionPath(resources.nodes), { body: node(n, { 'kubernetes.io/os': 'linux', 'cc-sel': 'yes' }, true) });
    await client.request('POST', collectionPath(resources.nodes), { body: node(win, { 'kubernetes.io/os': 'windows', 'cc-sel': 'yes' }, true) });
    await client.request('POST', collectionPath(resources.nodes), { body: node(dead, { 'kubernetes.io/os': 'linux' }, false) });
    await client.request('POST', collectionPath(resources.nodes), { body: node(deadWin, { 'kubernetes.io/os': 'windows' }, false) });
    operator = await startOperator(cluster.kubeconfig, opEnv);
  });

  after(async () => {
    await operator?.[Symbol.asyncDispose]();
    if (client) {
      for (const n of [ns, nsB, nsC]) {
        // Pods on the node without kwok would stay Terminating: remove them at once.
        for (const p of await listAll(client, resources.pods, n).catch(() => [])) {
          await client.request('DELETE', objectPath(resources.pods, n, p.metadata.name), { body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 } }).catch(() => undefined);
        }
        for (const c of await listAll<Capture>(client, resources.captures, n).catch(() => [])) {
          await client.request('PATCH', objectPath(resources.captures, n, c.metadata.name), { contentType: 'application/merge-patch+json', body: { metadata: { finalizers: null } } }).catch(() => undefined);
        }
        await deleteNamespace(client, n);
      }
      for (const n of [...lin, win, dead, deadWin]) await client.request('DELETE', objectPath(resources.nodes, undefined, n)).catch(() => undefined);
    }
    await cluster?.[Symbol.asyncDispose]();
  });

  const spec = (target: CaptureSpec['captureConfiguration']['captureTarget'], extra: Partial<CaptureSpec> = {}, duration = '1s'): CaptureSpec => ({
    captureConfiguration: { captureTarget: target, captureOption: { duration } },
    outputConfiguration: { hostPath: 'cc' },
    ...extra,
  });
  const createCapture = async (name: string, s: CaptureSpec, namespace = ns): Promise<void> => {
    await client.request('POST', collectionPath(resources.captures, namespace), { body: { apiVersion: 'retina.sh/v1alpha1', kind: 'Capture', metadata: { name, namespace }, spec: s } });
  };
  const getCapture = (name: string, namespace = ns): Promise<Capture> => client.request<Capture>('GET', objectPath(resources.captures, namespace, name));
  const jobsOf = (name: string, namespace = ns): Promise<Job[]> => listAll<Job>(client, resources.jobs, namespace, { labelSelector: `retina.sh/app=capture,capture-name=${name}` });
  const envOf = (j: Job): Record<string, string> => Object.fromEntries((j.spec.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));
  const byNode = (jobs: Job[]): string[] => jobs.map((j) => j.spec.template.spec.nodeName).sort();
  const nodeSel = { matchLabels: { 'cc-test': id, 'cc-sel': 'yes' } };

  /**
   * What the operator and the API server say about capture `name`, for a wait on the operator that timed out:
   * its capture queue and reconciles, its reflectors' lists and reconnects, the capture's status and its Jobs.
   */
  const why = async (name: string, namespace = ns, op = operator?.op): Promise<string> => {
    const text = op ? (await op.metrics.expose()).body : '(no operator runs)';
    const metrics = text.split('\n').filter((l) => /^(workqueue_depth|workqueue_adds_total|workqueue_retries_total|controller_runtime_reconcile_total|retina_operator_reflector_events_total)\{/.test(l) && !/name="(retinaendpoint|metricsconfiguration|containernetworklog)/i.test(l));
    const cap = await getCapture(name, namespace).then((c) => JSON.stringify({ finalizers: c.metadata.finalizers, status: c.status }), (e: unknown) => String(e));
    const jobs = await jobsOf(name, namespace).then((js) => js.map((j) => `${j.metadata.name} on ${j.spec.template.spec.nodeName}: ${JSON.stringify((j as { status?: unknown }).status)}`).join('; '), (e: unknown) => String(e));
    return `\n  operator: ${metrics.join(', ')}\n  capture ${namespace}/${name}: ${cap}\n  its jobs: ${jobs || 'none'}`;
  };
  /** eventually(), and on a timeout what the operator and the API server say about capture `name`. */
  const operatorDid = async <T>(what: string, name: string, timeoutMs: number, check: () => Promise<T | undefined | false>, namespace = ns, op = operator?.op): Promise<T> => {
    try {
      return await eventually(what, timeoutMs, check);
    } catch (e) {
      throw new Error(`${(e as Error).message}${await why(name, namespace, op)}`);
    }
  };

  it('node selector: one Job per node (Windows as HostProcess), finalizer, status counts as kwok completes the pods, events', async () => {
    await createCapture('bynode', spec({ nodeSelector: nodeSel }));
    const jobs = await eventually('3 jobs', 30_000, async () => {
      const j = await jobsOf('bynode');
      return j.length === 3 && j;
    });
    assert.deepEqual(byNode(jobs), [...lin, win].sort());
    const w = jobs.find((j) => j.spec.template.spec.nodeName === win) as Job;
    assert.equal(w.spec.template.spec.securityContext?.windowsOptions?.hostProcess, true);
    assert.equal(jobs.find((j) => j.spec.template.spec.nodeName === lin[0])?.spec.template.spec.securityContext?.windowsOptions, undefined);
    assert.ok(jobs.every((j) => j.metadata.ownerReferences?.[0]?.kind === 'Capture' && j.spec.activeDeadlineSeconds === 3));
    assert.ok(jobs.every((j) => j.metadata.generateName === 'bynode-'));
    const done = await eventually('all 3 completed', 60_000, async () => {
      const c = await getCapture('bynode');
      return c.status?.completionTime && c.status.succeeded === 3 ? c : undefined;
    });
    assert.ok(done.metadata.finalizers?.includes(CAPTURE_FINALIZER));
    assert.equal(done.status?.failed, 0);
    assert.equal(done.status?.active, 0);
    assert.deepEqual(done.status?.nodeCounts, { pending: 0, running: 0, completed: 3, failed: 0, uploaded: 0 });
    assert.deepEqual(done.status?.nodes?.map((n) => n.name), [...lin, win].sort());
    const complete = done.status?.conditions?.find((c) => c.type === 'complete');
    assert.equal(complete?.status, 'True');
    assert.equal(complete?.reason, 'JobsCompleted');
    assert.ok(!done.status?.conditions?.some((c) => c.type === 'error'));
    const events = await eventually('events', 10_000, async () => {
      const e = (await listAll<KubeObject & { reason: string; involvedObject: { name: string } }>(client, resources.events, ns)).filter((x) => x.involvedObject.name === 'bynode').map((x) => x.reason);
      return e.includes('JobsCompleted') && e;
    });
    assert.ok(events.includes('JobsCreated'));
  });

  it('pod selector across namespaces: Jobs only where the pods run, their IPs in the filters', async () => {
    const pod = (name: string, namespace: string, nodeName: string): unknown => ({
      apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels: { app: `${id}-web` } },
      spec: { nodeName, containers: [{ name: 'c', image: 'registry.invalid/x:1' }], tolerations: [{ operator: 'Exists' }], terminationGracePeriodSeconds: 0 },
    });
    await client.request('POST', collectionPath(resources.pods, ns), { body: pod('web-a', ns, lin[0] as string) });
    await client.request('POST', collectionPath(resources.pods, nsB), { body: pod('web-b', nsB, win) });
    await client.request('POST', collectionPath(resources.pods, nsC), { body: pod('web-c', nsC, lin[1] as string) }); // namespace not selected
    const ips = await eventually('pod IPs', 30_000, async () => {
      const a = await client.request<{ status?: { podIP?: string } }>('GET', objectPath(resources.pods, ns, 'web-a'));
      const b = await client.request<{ status?: { podIP?: string } }>('GET', objectPath(resources.pods, nsB, 'web-b'));
      return a.status?.podIP && b.status?.podIP ? { a: a.status.podIP, b: b.status.podIP } : undefined;
    });
    await createCapture('bypod', spec({ namespaceSelector: { matchLabels: { 'cc-team': id } }, podSelector: { matchLabels: { app: `${id}-web` } } }, { captureConfiguration: { captureTarget: { namespaceSelector: { matchLabels: { 'cc-team': id } }, podSelector: { matchLabels: { app: `${id}-web` } } }, filters: { exclude: ['*:22'] } } }));
    // The first test's Job on the Windows node may still lack its Complete condition (its pod has
    // succeeded): the capture must not wait for a 30 s resync, finished capture pods free the node.
    const jobs = await eventually('2 jobs', 10_000, async () => {
      const j = await jobsOf('bypod');
      return j.length === 2 && j;
    });
    assert.deepEqual(byNode(jobs), [lin[0], win].sort());
    const l = envOf(jobs.find((j) => j.spec.template.spec.nodeName === lin[0]) as Job);
    assert.equal(l['TCPDUMP_FILTER'], `(host ${ips.a}) and (not (port 22))`);
    const w = envOf(jobs.find((j) => j.spec.template.spec.nodeName === win) as Job);
    assert.equal(w['NETSH_FILTER'], `IPv4.Address=(${ips.b})`);
  });

  it('a target pod without an IP yet: no Job (its filter would capture everything), an error condition saying so', async () => {
    await client.request('POST', collectionPath(resources.pods, nsC), { body: {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'noip', namespace: nsC },
      spec: { nodeName: dead, containers: [{ name: 'c', image: 'registry.invalid/x:1' }], terminationGracePeriodSeconds: 0 },
    } }); // on the node without kwok: it never gets an IP
    await createCapture('noip', spec({ podNames: [`${nsC}/noip`] }));
    const c = await eventually('the no-IP condition', 15_000, async () => {
      const x = await getCapture('noip');
      return x.status?.conditions?.find((k) => k.type === 'error' && k.status === 'True') ? x : undefined;
    });
    assert.match(c.status?.conditions?.find((k) => k.type === 'error')?.message ?? '', new RegExp(`pod ${nsC}/noip on node ${dead} has no IP yet; retrying`));
    assert.equal(c.status?.startTime, undefined);
    assert.equal((await jobsOf('noip')).length, 0);
  });

  it('a Job that cannot run fails at its deadline (duration + slack): counts and the error condition say so', async () => {
    await createCapture('deadline', spec({ nodeSelector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [lin[0] as string, dead] }] } }));
    const c = await eventually('one failed, one succeeded', 60_000, async () => {
      const x = await getCapture('deadline');
      return x.status?.completionTime && x.status.failed === 1 && x.status.succeeded === 1 ? x : undefined;
    });
    assert.equal(c.status?.nodes?.find((n) => n.name === dead)?.state, 'Failed');
    assert.match(c.status?.nodes?.find((n) => n.name === dead)?.message ?? '', /DeadlineExceeded/);
    const err = c.status?.conditions?.find((x) => x.type === 'error');
    assert.equal(err?.status, 'True');
    assert.equal(err?.reason, 'RunJobFailed');
    assert.equal(c.status?.nodeCounts?.failed, 1);
  });

  it('the job limit: a capture needing more Jobs than captureJobNumLimit creates none', async () => {
    await createCapture('toomany', spec({ nodeSelector: { matchLabels: { 'cc-test': id } } })); // 5 nodes, limit 3
    const c = await eventually('ExceedJobNumLimit', 30_000, async () => {
      const x = await getCapture('toomany');
      return x.status?.conditions?.find((k) => k.type === 'error' && k.reason === 'ExceedJobNumLimit') && x;
    });
    assert.match(c.status?.conditions?.find((k) => k.type === 'error')?.message ?? '', /needs 5 jobs.*limit of 3/);
    assert.equal((await jobsOf('toomany')).length, 0);
  });

  it('triggered captures: the Job carries CAPTURE_TRIGGER and runs for the armed duration plus the post-trigger window; a bad trigger and a Windows target are error conditions naming them, with no Job', async () => {
    const trigger = { dropReason: 'NETFILTER_DROP', pod: `${ns}/web`, postTriggerDuration: '4s' };
    const linuxSel = { matchLabels: { 'cc-test': id, 'cc-sel': 'yes', 'kubernetes.io/os': 'linux' } };
    await createCapture('trig2', { ...spec({ nodeSelector: linuxSel }), captureConfiguration: { captureTarget: { nodeSelector: linuxSel }, captureOption: { duration: '1s' }, trigger } });
    const jobs = await eventually('2 triggered jobs', 30_000, async () => {
      const j = await jobsOf('trig2');
      return j.length === 2 && j;
    });
    assert.deepEqual(byNode(jobs), [...lin].sort());
    assert.deepEqual(JSON.parse(envOf(jobs[0] as Job)['CAPTURE_TRIGGER'] ?? '{}'), trigger);
    assert.ok(jobs.every((j) => j.spec.activeDeadlineSeconds === 1 + 4 + 2), 'duration + post-trigger + slack');
    await createCapture('badtrig', { ...spec({ nodeSelector: nodeSel }), captureConfiguration: { captureTarget: { nodeSelector: nodeSel }, trigger: { pod: 'web', preTrigger: { packets: 5, duration: '1s' } } } });
    const bad = await eventually('the bad trigger named', 30_000, async () => (await getCapture('badtrig')).status?.conditions?.find((k) => k.type === 'error')?.message);
    assert.match(bad, /spec\.captureConfiguration\.trigger\.pod: "web" is not namespace\/name/);
    assert.match(bad, /spec\.captureConfiguration\.trigger\.preTrigger: set packets or duration, not both/);
    await createCapture('wintrig', { ...spec({ nodeSelector: nodeSel }), captureConfiguration: { captureTarget: { nodeSelector: nodeSel }, trigger: { dropReason: 'NETFILTER_DROP' } } });
    const win1 = await eventually('the Windows target refused', 30_000, async () => (await getCapture('wintrig')).status?.conditions?.find((k) => k.type === 'error')?.message);
    assert.match(win1, new RegExp(`triggered captures run on Linux nodes only; Windows target node\\(s\\) ${win}`));
    assert.equal((await jobsOf('badtrig')).length + (await jobsOf('wintrig')).length, 0);
  });

  it('deleting a Capture: the finalizer deletes its Jobs and its own Secret (not a user\'s), then lets it go', async () => {
    const secret = (name: string, own: boolean): unknown => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns, labels: own ? { 'retina.sh/app': 'capture', 'capture-name': 'fin' } : {} }, stringData: { 'blob-upload-url': 'https://x.invalid/c?sig=s' } });
    await client.request('POST', collectionPath(resources.secrets, ns), { body: secret('fin-blob-upload-secret', true) });
    await client.request('POST', collectionPath(resources.secrets, ns), { body: secret('users-s3', false) });
    await createCapture('fin', spec({ nodeSelector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [dead] }] } }, {
      outputConfiguration: { hostPath: 'cc', blobUpload: 'fin-blob-upload-secret', s3Upload: { bucket: 'b', secretName: 'users-s3' } },
    }, '10m'));
    await eventually('the job', 30_000, async () => (await jobsOf('fin')).length === 1);
    await client.request('DELETE', objectPath(resources.captures, ns, 'fin'));
    await eventually('the capture gone', 30_000, async () => {
      try {
        await getCapture('fin');
        return false;
      } catch (e) {
        return isApiError(e, 404);
      }
    });
    assert.equal((await jobsOf('fin')).length, 0);
    await assert.rejects(client.request('GET', objectPath(resources.secrets, ns, 'fin-blob-upload-secret')), (e: unknown) => isApiError(e, 404));
    await client.request('GET', objectPath(resources.secrets, ns, 'users-s3'));
  });

  it('one capture at a time on a Windows node: the second waits with an error condition', async () => {
    const onDeadWin = spec({ nodeSelector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [deadWin] }] } }, {}, '10m');
    await createCapture('win1', onDeadWin);
    await eventually('the first job', 30_000, async () => (await jobsOf('win1')).length === 1);
    await createCapture('win2', onDeadWin);
    const c = await eventually('the second refused', 30_000, async () => {
      const x = await getCapture('win2');
      return x.status?.conditions?.find((k) => k.type === 'error' && /already run a capture/.test(k.message)) ? x : undefined;
    });
    assert.equal(c.status?.startTime, undefined);
    assert.equal((await jobsOf('win2')).length, 0);
    // The first one deleted (its finalizer deletes its Job), the node is free: the second starts.
    await client.request('DELETE', objectPath(resources.captures, ns, 'win1'));
    await operatorDid('the second started once the first was deleted', 'win2', 30_000, async () => (await jobsOf('win2')).length === 1);
  });

  it('a missing output secret: FindSecretFailed, no Job', async () => {
    await createCapture('nosecret', spec({ nodeSelector: nodeSel }, { outputConfiguration: { blobUpload: 'does-not-exist' } }));
    await eventually('FindSecretFailed', 30_000, async () => (await getCapture('nosecret')).status?.conditions?.some((k) => k.reason === 'FindSecretFailed'));
    assert.equal((await jobsOf('nosecret')).length, 0);
  });

  it('an operator restarted mid-capture (even with the status write lost) creates no Job twice', async () => {
    await createCapture('restart', spec({ nodeSelector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [lin[1] as string, dead] }] } }, {}, '10m'));
    const first = await eventually('2 jobs', 30_000, async () => {
      const j = await jobsOf('restart');
      return j.length === 2 && (await getCapture('restart')).status?.startTime ? j : undefined;
    });
    await operator?.[Symbol.asyncDispose]();
    operator = undefined;
    // As if the operator had died between creating the Jobs and writing the status.
    await client.request('PATCH', objectPath(resources.captures, ns, 'restart', 'status'), { contentType: 'application/merge-patch+json', body: { status: { startTime: null, active: null, conditions: null } } });
    operator = await startOperator(cluster.kubeconfig, opEnv);
    await eventually('status rewritten', 30_000, async () => (await getCapture('restart')).status?.startTime);
    await eventually('running status', 30_000, async () => (await getCapture('restart')).status?.nodeCounts?.completed === 1);
    const now = await jobsOf('restart');
    assert.deepEqual(now.map((j) => j.metadata.name).sort(), first.map((j) => j.metadata.name).sort());
    const c = await getCapture('restart');
    assert.equal(c.status?.active, 1);
    assert.equal(c.status?.nodeCounts?.pending, 1);
  });

  it('cleanUpAfterUpload: once every Job succeeded they are deleted, the status stays', async () => {
    await createCapture('cleanup', spec({ nodeSelector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [lin[0] as string] }] } }, { cleanUpAfterUpload: true }));
    await operatorDid('jobs deleted after success', 'cleanup', 60_000, async () => {
      const c = await getCapture('cleanup');
      return c.status?.succeeded === 1 && (await jobsOf('cleanup')).length === 0;
    });
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await getCapture('cleanup')).status?.succeeded, 1);
  });

  const cli = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    try {
      const r = await run(`${ROOT}bin/kubectl-retina`, [...args, '--kubeconfig', cluster.kubeconfig], { timeout: 120_000, env: { ...process.env, KUBECONFIG: '' } });
      return { code: 0, out: r.stdout, err: r.stderr };
    } catch (e) {
      const x = e as { code?: number; stdout?: string; stderr?: string };
      return { code: x.code ?? 1, out: x.stdout ?? '', err: x.stderr ?? '' };
    }
  };

  it('kubectl-retina without the operator: create makes Jobs + Secret itself; list; delete removes both; bad flags exit 2', async () => {
    const bad = await cli('capture', 'create', '--name', 'clibad', '-n', nsB, '--include-filter', '10.0.0.1:99999', '--host-path', '/etc');
    assert.equal(bad.code, 2, bad.err);
    assert.match(bad.err, /filters\.include\[0\]/);
    assert.match(bad.err, /outputConfiguration\.hostPath/);
    const c = await cli('capture', 'create', '--name', 'cli1', '-n', nsB, '--node-names', `${lin[0]},${win}`, '--blob-upload', 'https://acct.invalid/c?sig=secret', '--duration', '1s');
    assert.equal(c.code, 0, c.err);
    assert.ok(!`${c.out}${c.err}`.includes('sig=secret'), 'the SAS URL is not printed');
    const jobs = await jobsOf('cli1', nsB);
    assert.deepEqual(byNode(jobs), [lin[0], win].sort());
    assert.ok(jobs.every((j) => !j.metadata.ownerReferences?.length));
    // No capture ServiceAccount in nsB yet: the pods run as the default one, and the user is told what that costs.
    assert.ok(jobs.every((j) => j.spec.template.spec.serviceAccountName === undefined));
    assert.match(c.err, /no ServiceAccount retina-capture in namespace .*download lists each node's capture directory/);
    await client.request('GET', objectPath(resources.secrets, nsB, 'cli1-blob-upload-secret'));
    const again = await cli('capture', 'create', '--name', 'cli1', '-n', nsB, '--node-names', lin[0] as string);
    assert.equal(again.code, 1);
    assert.match(again.err, /already has jobs/);
    const l = await cli('capture', 'list', '-n', nsB);
    assert.equal(l.code, 0, l.err);
    assert.match(l.out, new RegExp(`${nsB}\\s+cli1\\s+Jobs\\s+2`));
    const all = await cli('capture', 'list', '-A');
    assert.match(all.out, new RegExp(`${ns}\\s+bynode\\s+Capture`));
    const d = await cli('capture', 'delete', '--name', 'cli1', '-n', nsB);
    assert.equal(d.code, 0, d.err);
    assert.match(d.out, /2 job\(s\), 1 secret\(s\)/);
    assert.equal((await jobsOf('cli1', nsB)).length, 0);
    await assert.rejects(client.request('GET', objectPath(resources.secrets, nsB, 'cli1-blob-upload-secret')), (e: unknown) => isApiError(e, 404));
    // Once the namespace has the account (as the operator leaves it), CLI-made pods run as it.
    await client.request('POST', `/api/v1/namespaces/${nsB}/serviceaccounts`, { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'retina-capture' } } });
    const c2 = await cli('capture', 'create', '--name', 'cli2', '-n', nsB, '--node-names', lin[0] as string, '--duration', '1s');
    assert.equal(c2.code, 0, c2.err);
    assert.doesNotMatch(c2.err, /no ServiceAccount/);
    assert.deepEqual((await jobsOf('cli2', nsB)).map((j) => j.spec.template.spec.serviceAccountName), ['retina-capture']);
    assert.equal((await cli('capture', 'delete', '--name', 'cli2', '-n', nsB)).code, 0);
  });

  it('kubectl-retina --no-wait=false: waits, prints per-node progress, then cleans up', async () => {
    const c = await cli('capture', 'create', '--name', 'cliwait', '-n', nsB, '--node-names', lin[1] as string, '--duration', '1s', '--no-wait=false', '--poll-interval', '500ms');
    assert.equal(c.code, 0, c.err + c.out);
    assert.match(c.out, new RegExp(`cliwait: ${lin[1]}=Completed`));
    assert.match(c.out, /deleted 1 job\(s\)/);
    assert.equal((await jobsOf('cliwait', nsB)).length, 0);
  });

  it('kubectl-retina --use-operator: creates a Capture the operator runs; delete lets the finalizer clean up', async () => {
    const c = await cli('capture', 'create', '--use-operator', '--name', 'cliop', '-n', nsB, '--node-names', lin[0] as string, '--duration', '1s');
    assert.equal(c.code, 0, c.err);
    const cap = await operatorDid('the operator ran it', 'cliop', 60_000, async () => {
      const x = await getCapture('cliop', nsB);
      return x.status?.succeeded === 1 && x;
    }, nsB);
    assert.deepEqual(cap.spec.captureConfiguration.captureTarget.nodeSelector, { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [lin[0]] }] });
    const l = await cli('capture', 'list', '-n', nsB);
    assert.match(l.out, /cliop\s+Capture\s+1\s+0\s+1\s+0\s+JobsCompleted/);
    const d = await cli('capture', 'delete', '--name', 'cliop', '-n', nsB);
    assert.equal(d.code, 0, d.err);
    await operatorDid('capture and jobs gone', 'cliop', 30_000, async () => {
      const gone = await getCapture('cliop', nsB).then(() => false, (e: unknown) => isApiError(e, 404));
      return gone && (await jobsOf('cliop', nsB)).length === 0;
    }, nsB);
  });

  it("with only the chart's RBAC (its ServiceAccount's token), the operator runs a capture and cleans it up", async () => {
    // Last: the admin operator stops, so only the least-privileged one acts.
    await operator?.[Symbol.asyncDispose]();
    operator = undefined;
    const { objects } = await render(undefined, ['--set', `operator.captureSecretNamespaces={${ns}}`], ns);
    // The chart's roles under this test's names (the operator's 'bind' names the capture pods' role).
    const role = JSON.parse(JSON.stringify(one(objects, 'ClusterRole', 'retina-operator')).replaceAll('"retina-capture"', `"${id}-op-capture"`)) as { rules: unknown[] };
    const podRole = one(objects, 'ClusterRole', 'retina-capture') as unknown as { rules: unknown[] };
    const secretsRole = one(objects, 'Role', 'retina-operator-capture-secrets') as unknown as { rules: unknown[] };
    const rbac = (plural: string, namespaced: boolean): Parameters<typeof collectionPath>[0] => ({ group: 'rbac.authorization.k8s.io', version: 'v1', plural, kind: '', namespaced });
    const sa = `${id}-op`;
    await client.request('POST', collectionPath({ group: '', version: 'v1', plural: 'serviceaccounts', kind: '', namespaced: true }, ns), { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa } } });
    await client.request('POST', collectionPath(rbac('clusterroles', false)), { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: sa }, rules: role.rules } });
    await client.request('POST', collectionPath(rbac('clusterrolebindings', false)), { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: sa }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: sa }, subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }] } });
    await client.request('POST', collectionPath(rbac('clusterroles', false)), { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `${sa}-capture` }, rules: podRole.rules } });
    await client.request('POST', collectionPath(rbac('roles', true), ns), { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: sa }, rules: secretsRole.rules } });
    await client.request('POST', collectionPath(rbac('rolebindings', true), ns), { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: sa }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sa }, subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }] } });
    const dir = mkdtempSync(join(tmpdir(), 'cc-rbac-'));
    const kubeconfigOf = async (account: string): Promise<string> => {
      const tr = await client.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${ns}/serviceaccounts/${account}/token`, { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: ['https://kubernetes.default.svc'], expirationSeconds: 3600 } } });
      const kc = join(dir, `kubeconfig-${account}`);
      writeFileSync(kc, readFileSync(cluster.kubeconfig, 'utf8').replace(/token: \S+/, `token: ${tr.status.token}`));
      return kc;
    };
    const kc = await kubeconfigOf(sa);
    try {
      await using limited = await startOperator(kc, { ...opEnv, RETINA_CAPTURESERVICEACCOUNTCLUSTERROLE: `${sa}-capture` });
      await eventually('informers synced with the chart RBAC', 30_000, () => limited.op.synced());
      await client.request('POST', collectionPath(resources.secrets, ns), { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'rbac-blob-upload-secret', namespace: ns, labels: { 'retina.sh/app': 'capture', 'capture-name': 'rbac' } }, stringData: { 'blob-upload-url': 'https://x.invalid/c?sig=s' } } });
      await createCapture('rbac', spec({ nodeSelector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [lin[0] as string] }] } }, { outputConfiguration: { hostPath: 'cc', blobUpload: 'rbac-blob-upload-secret' } }));
      await operatorDid('succeeded under the chart RBAC', 'rbac', 60_000, async () => (await getCapture('rbac')).status?.succeeded === 1, ns, limited.op);
      // The capture pod runs as retina-capture, which may annotate its pod: that is what "uploaded" counts.
      const [job] = await jobsOf('rbac');
      assert.equal((job?.spec.template.spec as { serviceAccountName?: string }).serviceAccountName, 'retina-capture');
      const [pod] = await listAll(client, resources.pods, ns, { labelSelector: 'capture-name=rbac' });
      const file = `rbac-${lin[0]}-20261123120000UTC.tar.gz`;
      const podClient = await newClient(await kubeconfigOf('retina-capture'));
      try {
        await podClient.request('PATCH', objectPath(resources.pods, ns, pod?.metadata.name as string), { contentType: 'application/merge-patch+json', body: { metadata: { annotations: { 'retina-capture-filename': file } } } });
        await assert.rejects(podClient.request('DELETE', objectPath(resources.pods, ns, pod?.metadata.name as string)), (e: unknown) => isApiError(e, 403));
      } finally {
        podClient.close();
      }
      const up = await operatorDid('uploaded counted', 'rbac', 30_000, async () => {
        const c = await getCapture('rbac');
        return c.status?.nodeCounts?.uploaded === 1 ? c : undefined;
      }, ns, limited.op);
      assert.equal(up.status?.nodes?.[0]?.file, file);
      await client.request('DELETE', objectPath(resources.captures, ns, 'rbac'));
      await operatorDid('capture, jobs and secret gone', 'rbac', 30_000, async () => {
        const gone = await getCapture('rbac').then(() => false, (e: unknown) => isApiError(e, 404));
        const secretGone = await client.request('GET', objectPath(resources.secrets, ns, 'rbac-blob-upload-secret')).then(() => false, (e: unknown) => isApiError(e, 404));
        return gone && secretGone && (await jobsOf('rbac')).length === 0;
      }, ns, limited.op);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await client.request('DELETE', objectPath(rbac('clusterrolebindings', false), undefined, sa)).catch(() => undefined);
      await client.request('DELETE', objectPath(rbac('clusterroles', false), undefined, sa)).catch(() => undefined);
      await client.request('DELETE', objectPath(rbac('clusterroles', false), undefined, `${sa}-capture`)).catch(() => undefined);
    }
  });
});
