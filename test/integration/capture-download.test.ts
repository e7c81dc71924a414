/**
 * `kubectl-retina capture download` against the real control plane. kwok runs `pods/exec` as a local
 * command in its exec root (hack/k8s/harness.sh), so the helper pod's `cat host/<hostPath>/<file>`
 * reads real tarballs this test wrote there; nodes whose only address is 127.0.0.1 make the API
 * server's exec connection reach kwok. Proves: files arrive byte-identical and verified (by the
 * filename annotation and by listing the host directory), a wrong manifest digest fails the command,
 * `--all` bundles `[ns/]capture/…`, errors are clear (node gone, exec refused by RBAC, helper pod
 * never running), and the helper pod is deleted in every case, Ctrl-C included.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BatchV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { list as tarList } from 'tar';
import { runDownload } from '../../src/cli/capture/download.js';
import { captureBaseName } from '../../src/capture/naming.js';
import { Sink, writeCaptureTarball } from '../capture/fixtures.js';
import { EXEC_ROOT, ROOT, eventually, startCluster, type Cluster } from './harness.js';

const NS1 = 'cd-dl-one';
const NS2 = 'cd-dl-two';
const NS3 = 'cd-dl-bad';
const NODE_A = 'cd-node-a';
const NODE_B = 'cd-node-b';
const NODE_IDLE = 'cd-node-idle'; // not managed by kwok: pods on it never run
const NODE_WIN = 'cd-node-win'; // not managed either
const BASE_DIR = '/var/log/retina/captures';
const AT = new Date(Date.UTC(2026, 10, 23, 19, 0, 5));

describe('capture download from nodes', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let batch: BatchV1Api;
  let out = '';
  const hostDirs: string[] = [];
  const sources = new Map<string, Buffer>();

  async function helperPods(namespace: string): Promise<V1Pod[]> {
    return (await core.listNamespacedPod({ namespace, labelSelector: 'retina.sh/app=capture-download' })).items;
  }

  /** A capture Job with its pod on `node`; kwok completes the pod (Job-owned) unless the node is idle. */
  async function capturePod(ns: string, capture: string, node: string, ann: Record<string, string>): Promise<string> {
    const labels = { 'retina.sh/app': 'capture', 'capture-name': capture };
    const tmpl = { containers: [{ name: 'retina-capture', image: 'retina-capture' }], restartPolicy: 'Never', nodeName: node };
    const job = await batch.createNamespacedJob({ namespace: ns, body: { metadata: { generateName: `${capture}-`, labels }, spec: { backoffLimit: 0, template: { metadata: { labels }, spec: tmpl } } } });
    const pod = await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: {
          generateName: `${job.metadata?.name}-`,
          labels,
          annotations: ann,
          ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: job.metadata?.name ?? '', uid: job.metadata?.uid ?? '', controller: true }],
        },
        spec: tmpl,
      },
    });
    const name = pod.metadata?.name ?? '';
    if (node === NODE_IDLE || node === NODE_WIN || node.startsWith('cd-node-gone')) {
      // The Job controller may write the pod meanwhile (its tracking finalizer): a conflict reads it again.
      for (let body = pod; ; body = await core.readNamespacedPod({ name, namespace: ns })) {
        body.status = { phase: 'Succeeded' };
        try {
          await core.replaceNamespacedPodStatus({ name, namespace: ns, body });
          break;
        } catch (e) {
          if ((e as { code?: number }).code !== 409) throw e;
        }
      }
    }
    await eventually(`pod ${ns}/${name} Succeeded`, 30_000, async () => (await core.readNamespacedPod({ name, namespace: ns })).status?.phase === 'Succeeded');
    return name;
  }

  /** Writes the node's tarball where the helper pod's exec will read it; returns its name. */
  async function nodeTarball(capture: string, node: string, o: Parameters<typeof writeCaptureTarball>[2] = {}): Promise<{ name: string; hostPath: string }> {
    const hostPath = `${BASE_DIR}/${capture}`;
    const base = captureBaseName(capture, node, AT);
    const file = join(EXEC_ROOT, 'host', hostPath, `${base}.tar.gz`);
    await writeCaptureTarball(file, base, o);
    hostDirs.push(join(EXEC_ROOT, 'host', hostPath));
    sources.set(`${base}.tar.gz`, readFileSync(file));
    return { name: `${base}.tar.gz`, hostPath };
  }

  async function download(args: string[], extra: Parameters<typeof runDownload>[1] = {}): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
    const stdout = new Sink();
    const stderr = new Sink();
    const t0 = Date.now();
    const code = await runDownload([...args, '--kubeconfig', cluster.kubeconfig], { stdout, stderr, handleSignals: false, now: () => AT, ...extra });
    return { code, stdout: stdout.text, stderr: stderr.text, ms: Date.now() - t0 };
  }

  before(async () => {
    cluster = await startCluster();
    kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    batch = kc.makeApiClient(BatchV1Api);
    out = mkdtempSync(join(tmpdir(), 'rt-cd-out-'));
    for (const [name, managed] of [[NODE_A, true], [NODE_B, true], [NODE_IDLE, false]] as const) {
      await core.deleteNode({ name }).catch(() => undefined);
      await core.createNode({
        body: {
          metadata: { name, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': name }, annotations: managed ? { 'kwok.x-k8s.io/node': 'fake' } : {} },
          status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }] },
        },
      });
    }
    for (const ns of [NS1, NS2, NS3]) await core.createNamespace({ body: { metadata: { name: ns } } }).catch(() => undefined);
    await eventually('kwok nodes Ready', 30_000, async () => {
      for (const n of [NODE_A, NODE_B]) {
        const node = await core.readNode({ name: n });
        if (!node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return false;
      }
      return true;
    });
  });

  after(async () => {
    for (const ns of [NS1, NS2, NS3]) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
    for (const name of [NODE_A, NODE_B, NODE_IDLE, NODE_WIN]) await core?.deleteNode({ name }).catch(() => undefined);
    for (const d of hostDirs) rmSync(d, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  it('downloads each node tarball byte-identical and verified, by annotation and by listing the host directory', async (t) => {
    const a = await nodeTarball('cap-one', NODE_A, { pcapBytes: 4 << 20 });
    const b = await nodeTarball('cap-one', NODE_B);
    // node A's pod names its file (as ours does, with .tar.gz); node B's has none: the host directory is listed
    await capturePod(NS1, 'cap-one', NODE_A, { 'retina-capture-hostpath': a.hostPath, 'retina-capture-filename': a.name });
    await capturePod(NS1, 'cap-one', NODE_B, { 'retina-capture-hostpath': b.hostPath });
    // an unrelated file in the same directory is not taken for node B's
    writeFileSync(join(EXEC_ROOT, 'host', b.hostPath, 'cap-one-other-node-20260101000000UTC.tar.gz'), 'x');
    const r = await download(['--name', 'cap-one', '-n', NS1, '-o', out]);
    assert.equal(r.code, 0, r.stderr);
    const dir = join(out, 'cap-one');
    assert.deepEqual(readdirSync(dir).sort(), [a.name, b.name].sort());
    for (const f of [a.name, b.name]) assert.ok(readFileSync(join(dir, f)).equals(sources.get(f) ?? Buffer.alloc(0)), `${f} differs from the node's file`);
    assert.match(r.stderr, new RegExp(`verified .*${a.name}: sha256 of 1 file\\(s\\) match`));
    assert.match(r.stderr, new RegExp(`verified .*${b.name}: sha256 of 1 file\\(s\\) match`));
    assert.match(r.stdout, /File written to: .*cap-one-cd-node-a-20261123190005UTC\.tar\.gz/);
    assert.deepEqual(await helperPods(NS1), [], 'helper pods left behind');
    t.diagnostic(`2 nodes, ${((sources.get(a.name)?.length ?? 0) / 1048576).toFixed(1)} MiB + ${((sources.get(b.name)?.length ?? 0) / 1024).toFixed(0)} KiB in ${r.ms} ms (helper pods created, exec'd and deleted)`);
  });

  it('fails on a manifest digest that does not match, and still deletes the helper pod', async () => {
    const bad = await nodeTarball('cap-bad', NODE_A, { wrongDigest: true });
    await capturePod(NS3, 'cap-bad', NODE_A, { 'retina-capture-hostpath': bad.hostPath, 'retina-capture-filename': bad.name.replace(/\.tar\.gz$/, '') });
    const r = await download(['--name', 'cap-bad', '-n', NS3, '-o', out]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /checksum verification failed: .*cap-bad-cd-node-a-20261123190005UTC\.pcap: sha256 [0-9a-f]{64}, manifest says [0-9a-f]{64}/);
    assert.deepEqual(await helperPods(NS3), []);
    // the Jobs go, so --all below does not meet this capture: gone, not only asked to go (a Job deleted
    // with the API's default propagation waits for the garbage collector to orphan its pods, which a
    // busy control plane takes seconds to do)
    await batch.deleteCollectionNamespacedJob({ namespace: NS3 });
    await eventually(`the Jobs of ${NS3} gone`, 60_000, async () => (await batch.listNamespacedJob({ namespace: NS3 })).items.length === 0);
  });

  it('--all bundles every capture into all-captures-<ts>.tar.gz, organised [ns/]capture/', async () => {
    const c = await nodeTarball('cap-two', NODE_B);
    await capturePod(NS2, 'cap-two', NODE_B, { 'retina-capture-hostpath': c.hostPath, 'retina-capture-filename': c.name });
    const bundleDir = mkdtempSync(join(out, 'all-'));
    const r = await download(['--all', '--all-namespaces', '-o', bundleDir]);
    assert.equal(r.code, 0, r.stderr);
    const bundle = join(bundleDir, 'all-captures-20261123190005.tar.gz');
    assert.ok(existsSync(bundle), r.stdout);
    const entries = new Map<string, Buffer>();
    await tarList({
      file: bundle,
      onReadEntry: (e) => {
        const chunks: Buffer[] = [];
        e.on('data', (d: Buffer) => chunks.push(d));
        e.on('end', () => entries.set(e.path, Buffer.concat(chunks)));
      },
    });
    const want = [
      `${NS1}/cap-one/cap-one-cd-node-a-20261123190005UTC.tar.gz`,
      `${NS1}/cap-one/cap-one-cd-node-b-20261123190005UTC.tar.gz`,
      `${NS2}/cap-two/cap-two-cd-node-b-20261123190005UTC.tar.gz`,
    ];
    // This file's namespaces only: the control plane is shared with the suite's other files (hack/test/lanes.mjs).
    assert.deepEqual([...entries.keys()].filter((k) => k.endsWith('.tar.gz') && k.startsWith('cd-dl-')).sort(), want);
    for (const k of want) assert.ok(entries.get(k)?.equals(sources.get(k.split('/').at(-1) ?? '') ?? Buffer.alloc(0)), `${k} differs`);
    assert.deepEqual(readdirSync(bundleDir), ['all-captures-20261123190005.tar.gz'], 'the staging directory was left behind');
    // one namespace: no namespace level
    const one = mkdtempSync(join(out, 'all1-'));
    const r1 = await download(['--all', '-n', NS2, '-o', one]);
    assert.equal(r1.code, 0, r1.stderr);
    const names: string[] = [];
    await tarList({ file: join(one, 'all-captures-20261123190005.tar.gz'), onReadEntry: (e) => void names.push(e.path) });
    assert.deepEqual(names.filter((n) => n.endsWith('.tar.gz')), ['cap-two/cap-two-cd-node-b-20261123190005UTC.tar.gz']);
    assert.deepEqual([...(await helperPods(NS1)), ...(await helperPods(NS2))], []);
  });

  it('says clearly when there is nothing to download or the node is gone', async () => {
    const none = await download(['--name', 'no-such-capture', '-n', NS1, '-o', out]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /capture cd-dl-one\/no-such-capture: no pods found with label capture-name=no-such-capture/);
    const gone = 'cd-node-gone';
    await core.createNode({ body: { metadata: { name: gone } } });
    await capturePod(NS1, 'cap-gone', gone, { 'retina-capture-hostpath': `${BASE_DIR}/cap-gone` });
    await core.deleteNode({ name: gone });
    const r = await download(['--name', 'cap-gone', '-n', NS1, '-o', out]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /node cd-node-gone no longer exists/);
    const bad = await download(['--all-namespaces', '-o', out]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--all-namespaces works only with --all/);
  });

  it('a helper pod that never runs: a clear timeout, and Ctrl-C; both delete the pod; Linux and Windows pod specs', async () => {
    await capturePod(NS2, 'cap-idle', NODE_IDLE, { 'retina-capture-hostpath': `${BASE_DIR}/cap-idle`, 'retina-capture-filename': 'x.tar.gz' });
    const r = await download(['--name', 'cap-idle', '-n', NS2, '-o', out, '--pod-timeout', '1']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /helper pod cd-dl-two\/cap-idle-download-[0-9a-f]+ on node cd-node-idle is not Running after 1 s/);
    assert.deepEqual(await helperPods(NS2), []);

    // Ctrl-C while the helper pod waits (the image from RETINA_DOWNLOAD_IMAGE)
    const ac = new AbortController();
    const running = download(['--name', 'cap-idle', '-n', NS2, '-o', out], { signal: ac.signal, env: { RETINA_DOWNLOAD_IMAGE: 'registry.local/busybox:test' } });
    const [linux] = await eventually('the helper pod', 20_000, async () => {
      const p = await helperPods(NS2);
      return p.length === 1 ? p : undefined;
    });
    ac.abort();
    const c = await running;
    assert.equal(c.code, 130, c.stderr);
    assert.deepEqual(await helperPods(NS2), [], 'Ctrl-C left the helper pod');
    assert.equal(linux?.spec?.nodeName, NODE_IDLE);
    const lc = linux?.spec?.containers[0];
    assert.equal(lc?.image, 'registry.local/busybox:test');
    assert.deepEqual(lc?.volumeMounts?.map((m) => [m.mountPath, m.readOnly]), [[`/host${BASE_DIR}/cap-idle`, true]]);
    assert.deepEqual(linux?.spec?.volumes?.map((v) => [v.hostPath?.path, v.hostPath?.type]), [[`${BASE_DIR}/cap-idle`, 'Directory']]);

    // a real SIGINT to a real process
    const child = spawn(process.execPath, [join(ROOT, 'dist/test/capture/download-entry.js'), '--name', 'cap-idle', '-n', NS2, '-o', out, '--kubeconfig', cluster.kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] });
    let childErr = '';
    child.stderr?.on('data', (d: Buffer) => (childErr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await eventually('the helper pod of the child', 20_000, async () => (await helperPods(NS2)).length === 1);
    child.kill('SIGINT');
    assert.equal(await exited, 130, childErr);
    assert.match(childErr, /SIGINT: stopping, deleting helper pods/);
    assert.deepEqual(await helperPods(NS2), [], 'SIGINT left the helper pod');

    // a Windows node: nanoserver of the node's LTSC, the host directory at C:\host<dir>
    await core.deleteNode({ name: NODE_WIN }).catch(() => undefined);
    await core.createNode({
      body: {
        metadata: { name: NODE_WIN, labels: { 'kubernetes.io/os': 'windows' } },
        status: { nodeInfo: { operatingSystem: 'windows', osImage: 'Windows Server 2025 Datacenter', architecture: 'amd64', bootID: '', containerRuntimeVersion: '', kernelVersion: '', kubeProxyVersion: '', kubeletVersion: '', machineID: '', systemUUID: '' } },
      },
    });
    await capturePod(NS2, 'cap-win', NODE_WIN, { 'retina-capture-hostpath': '/retina/captures', 'retina-capture-filename': 'x.tar.gz' });
    const ac2 = new AbortController();
    const win = download(['--name', 'cap-win', '-n', NS2, '-o', out], { signal: ac2.signal });
    const [wp] = await eventually('the Windows helper pod', 20_000, async () => {
      const p = await helperPods(NS2);
      return p.length === 1 ? p : undefined;
    });
    ac2.abort();
    assert.equal((await win).code, 130);
    assert.deepEqual(await helperPods(NS2), []);
    assert.equal(wp?.spec?.containers[0]?.image, 'mcr.microsoft.com/windows/nanoserver:ltsc2025');
    assert.equal(wp?.spec?.containers[0]?.command?.[0], 'cmd');
    assert.equal(wp?.spec?.containers[0]?.volumeMounts?.[0]?.mountPath, 'C:\\host\\retina\\captures');
  });

  it('exec refused by RBAC is named as such', async () => {
    const sa = 'cd-no-exec';
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace: NS1, body: { metadata: { name: sa } } });
    await rbac.createNamespacedRole({ namespace: NS1, body: { metadata: { name: sa }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'create', 'delete'] }] } });
    await rbac.createNamespacedRoleBinding({ namespace: NS1, body: { metadata: { name: sa }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sa }, subjects: [{ kind: 'ServiceAccount', name: sa, namespace: NS1 }] } });
    await rbac.createClusterRole({ body: { metadata: { name: sa }, rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }] } }).catch(() => undefined);
    await rbac.createClusterRoleBinding({ body: { metadata: { name: sa }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: sa }, subjects: [{ kind: 'ServiceAccount', name: sa, namespace: NS1 }] } }).catch(() => undefined);
    try {
      const tok = await core.createNamespacedServiceAccountToken({ name: sa, namespace: NS1, body: { spec: { audiences: ['https://kubernetes.default.svc'], expirationSeconds: 600 } } });
      const limited = new KubeConfig();
      limited.loadFromOptions({
        clusters: [kc.getCurrentCluster()!],
        users: [{ name: sa, token: tok.status?.token ?? '' }],
        contexts: [{ name: sa, cluster: kc.getCurrentCluster()!.name, user: sa }],
        currentContext: sa,
      });
      const file = join(out, 'limited.kubeconfig');
      writeFileSync(file, limited.exportConfig());
      const stdout = new Sink();
      const stderr = new Sink();
      const code = await runDownload(['--name', 'cap-one', '-n', NS1, '-o', join(out, 'rbac'), '--kubeconfig', file], { stdout, stderr, handleSignals: false });
      assert.equal(code, 1);
      assert.match(stderr.text, /exec into cd-dl-one\/cap-one-download-[0-9a-f]+ was refused \(403 Forbidden\); the download needs RBAC 'create' on pods\/exec in namespace cd-dl-one/);
      assert.deepEqual(await helperPods(NS1), []);
    } finally {
      await rbac.deleteClusterRoleBinding({ name: sa }).catch(() => undefined);
      await rbac.deleteClusterRole({ name: sa }).catch(() => undefined);
    }
  });
});
