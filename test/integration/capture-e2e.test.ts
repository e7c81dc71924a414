/**
 * A capture from end to end, as a user runs it, on the test control plane: `kubectl-retina capture
 * create` (the real bin, no operator) makes the Job; the test then plays the kubelet for its one pod:
 * it runs the real `retina-capture` with exactly the pod's environment (fieldRefs resolved, the Job's
 * hostPath mapped into kwok's exec root, which is what the node's disk is for the download's helper
 * pod); the workload captures real loopback traffic, writes the tarball and annotates its pod; then
 * `kubectl-retina capture download` fetches it through a helper pod and pods/exec and verifies it.
 * Proves the three parts agree (Job shape, env contract, file naming, annotations, manifest) and
 * measures the time from `create` to a downloaded, verified tarball.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { addLocalNode, capturePodEnv, findCapturePod, playCapturePod } from '../capture/pod-runner.js';
import { extract, pcapLines } from '../capture/workload-run.js';
import { EXEC_ROOT, ROOT, eventually, startCluster, type Cluster } from './harness.js';

const run = promisify(execFile);
const NS = 'ce-e2e';
const NODE = 'ce-node-0';
const CAPTURE = 'ce-cap';
const PORT = 39_517;
const OTHER_PORT = 39_518;

async function kubectlRetina(args: readonly string[], kubeconfig: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(`${ROOT}bin/kubectl-retina`, [...args, '--kubeconfig', kubeconfig], { maxBuffer: 16 << 20, timeout: 120_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : 1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

async function sendUdp(port: number, count: number): Promise<void> {
  const s = createSocket('udp4');
  for (let i = 0; i < count; i++) {
    await new Promise<void>((resolve, reject) => s.send(Buffer.from(`ce-${port}-${i}`), port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
    await new Promise((r) => setTimeout(r, 20));
  }
  s.close();
}

describe('capture end to end: create, the workload on its node, download', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let core: CoreV1Api;
  const out = mkdtempSync(join(tmpdir(), 'ce-out-'));
  const hostRoot = join(EXEC_ROOT, 'host');

  before(async () => {
    cluster = await startCluster();
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    await core.deleteNode({ name: NODE }).catch(() => undefined);
    await core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined);
    // the walkthrough's `run-pod.mjs --add-node`: a kwok node reachable for pods/exec (address 127.0.0.1)
    await addLocalNode(NODE, { kubeconfig: cluster.kubeconfig });
  });

  after(async () => {
    await core?.deleteNamespace({ name: NS }).catch(() => undefined);
    await core?.deleteNode({ name: NODE }).catch(() => undefined);
    rmSync(join(hostRoot, 'var/log/retina/captures/ce'), { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  it('the tarball the workload wrote on the node is downloaded and verified, holding only the filtered packets', async () => {
    const t0 = Date.now();
    const created = await kubectlRetina(['capture', 'create', '--name', CAPTURE, '--namespace', NS, '--node-names', NODE, '--duration', '4s',
      '--host-path', 'ce', '--interfaces', 'lo', '--include-filter', `127.0.0.1:${PORT}`, '--include-metadata=false'], cluster.kubeconfig);
    assert.equal(created.code, 0, created.stderr + created.stdout);

    // The kubelet's part, as the README's walkthrough plays it (hack/capture/run-pod.mjs): the Job's pod,
    // its environment with the fieldRefs resolved, its hostPath on the node's disk (kwok's exec root).
    const pod = await findCapturePod(NS, CAPTURE, { kubeconfig: cluster.kubeconfig });
    assert.equal(pod.spec?.nodeName, NODE);
    assert.deepEqual(pod.spec?.containers[0]?.command?.slice(-1), ['/app/retina-capture.mjs']);
    const hostPath = pod.spec?.containers[0]?.env?.find((e) => e.name === 'HOSTPATH')?.value;
    assert.equal(hostPath, '/var/log/retina/captures/ce');
    const env = capturePodEnv(pod, { kubeconfig: cluster.kubeconfig });
    assert.equal(env['HOSTPATH'], join(hostRoot, hostPath));
    assert.equal(env['NODE_HOST_NAME'], NODE);

    const w = playCapturePod(pod, { kubeconfig: cluster.kubeconfig });
    await w.capturing;
    await Promise.all([sendUdp(PORT, 15), sendUdp(OTHER_PORT, 10)]);
    const done = await w.done;
    assert.equal(done.code, 0, done.stderr + done.termination);
    const annotated = await eventually('the pod annotated with its tarball', 30_000, async () =>
      (await core.readNamespacedPod({ name: pod.metadata?.name ?? '', namespace: NS })).metadata?.annotations?.['retina-capture-filename']);
    assert.match(annotated, new RegExp(`^${CAPTURE}-${NODE}-\\d{14}UTC(\\.tar\\.gz)?$`));

    const dl = await kubectlRetina(['capture', 'download', '--name', CAPTURE, '--namespace', NS, '-o', out], cluster.kubeconfig);
    const ms = Date.now() - t0;
    assert.equal(dl.code, 0, dl.stderr + dl.stdout);
    const files = (readdirSync(out, { recursive: true }) as string[]).map(String).filter((f) => f.endsWith('.tar.gz'));
    assert.equal(files.length, 1, `${files.join()} ${dl.stdout} ${dl.stderr}`);
    const x = extract(join(out, files[0] as string));
    assert.equal(x.manifest.captureName, CAPTURE);
    assert.equal(x.manifest.nodeName, NODE);
    const pcap = x.manifest.files[0]?.name ?? '';
    assert.ok(existsSync(join(x.folder, pcap)), pcap);
    const lines = pcapLines(join(x.folder, pcap));
    assert.equal(lines.length, 15, lines.join('\n'));
    assert.ok(lines.every((l) => l.includes(`.${PORT}`)), 'only the filtered port');
    assert.equal(x.manifest.packets, 15);
    process.stdout.write(`# capture e2e: create to a downloaded, verified tarball in ${(ms / 1000).toFixed(1)} s (4 s of it capturing)\n`);

    const deleted = await kubectlRetina(['capture', 'delete', '--name', CAPTURE, '--namespace', NS], cluster.kubeconfig);
    assert.equal(deleted.code, 0, deleted.stderr);
    await eventually('the capture Jobs gone', 30_000, async () =>
      (await core.listNamespacedPod({ namespace: NS, labelSelector: `capture-name=${CAPTURE},retina.sh/app=capture` })).items.every((p) => p.metadata?.deletionTimestamp) || undefined);
  });
});
