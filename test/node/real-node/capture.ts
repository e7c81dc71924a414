/**
 * Real-node case, capture: `kubectl-retina capture create` runs the real image's capture Job on the
 * node, and `capture download` brings its tarball back through a helper pod and pods/exec (see
 * test/node/real-node.test.ts for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { objectPath, resources } from '../../../src/k8s/index.js';
import { extract, pcapLines } from '../../capture/workload-run.js';
import { ROOT } from '../../chart/helm.js';
import { sh } from '../../ebpf/netns.js';
import { createNamespace, eventually, listAll } from '../../integration/harness.js';
import { NODE_NAME, importImage } from '../node.js';
import { podLog, type Pod } from '../workloads.js';
import { run, type RealNodeSuite } from './suite.js';

/** kubectl-retina capture create and download on the real node. */
export function captureCases(s: RealNodeSuite): void {
  // The capture Job runs in the real image on the real node and writes its tarball to the node's disk;
  // `capture download` brings it back through a helper pod and pods/exec.
  it('kubectl-retina capture create: the Job\'s pod runs the real image on the node, captures exactly the filtered packets, and writes its tarball to the node\'s disk; capture download brings it back through pods/exec', async (t) => {
    const { node, client, imageRef } = s;
    const captureNs = 'rn-capture';
    const PORT = 39_617;
    const hadLogDir = existsSync('/var/log/retina');
    await createNamespace(client, captureNs);
    try {
      const t0 = Date.now();
      const created = await run(`${ROOT}bin/kubectl-retina`, ['capture', 'create', '--name', 'rn-cap', '--namespace', captureNs, '--node-names', NODE_NAME, '--duration', '6s',
        '--host-path', 'rn', '--interfaces', 'lo', '--include-filter', `127.0.0.1:${PORT}`, '--include-metadata=false', '--debug=true', '--kubeconfig', node.kubeconfig],
      { env: { ...process.env, RETINA_AGENT_IMAGE: imageRef }, timeout: 120_000 }).catch((e: unknown) => assert.fail(`capture create: ${String((e as { stderr?: string }).stderr ?? e)}`));
      assert.ok(created.stdout.length >= 0);
      const pod = await eventually('the capture pod Running', 120_000, async () => {
        const ps = await listAll<Pod>(client, resources.pods, captureNs, { labelSelector: 'capture-name=rn-cap' });
        return ps.find((p) => p.status?.phase === 'Running' || p.status?.phase === 'Succeeded');
      }, 250);
      assert.equal(pod.spec.nodeName, NODE_NAME);
      // Running is not capturing yet: tcpdump listens a moment later (seconds on a busy host). The
      // workload logs "capturing" once every tcpdump says it listens.
      await eventually('the capture workload\'s "capturing" log line', 30_000, async () =>
        (await podLog(client, pod)).some((l) => l['msg'] === 'capturing'), 200);
      const s = createSocket('udp4');
      for (let i = 0; i < 15; i++) await new Promise<void>((res, rej) => s.send(Buffer.from(`rn-${i}`), PORT, '127.0.0.1', (e) => (e ? rej(e) : res())));
      for (let i = 0; i < 10; i++) await new Promise<void>((res, rej) => s.send(Buffer.from(`other-${i}`), PORT + 1, '127.0.0.1', (e) => (e ? rej(e) : res())));
      s.close();
      // Without the operator's retina-capture ServiceAccount the pod cannot annotate itself (kubectl-retina
      // says so at create; download then lists the node's directory): the tarball is found on the disk.
      await eventually('the capture pod Succeeded', 60_000, async () =>
        (await client.request<Pod>('GET', objectPath(resources.pods, captureNs, pod.metadata.name))).status?.phase === 'Succeeded', 500);
      const dir = '/var/log/retina/captures/rn';
      const tarballs = existsSync(dir) ? sh('ls', [dir]).split('\n').filter((f) => f.endsWith('.tar.gz')) : [];
      assert.equal(tarballs.length, 1, `one tarball in ${dir} on the node's disk: ${tarballs.join(', ')}`);
      assert.match(tarballs[0] ?? '', new RegExp(`^rn-cap-${NODE_NAME}-\\d{14}UTC\\.tar\\.gz$`));
      const tarball = join(dir, tarballs[0] ?? '');
      const x = extract(tarball);
      const pcap = x.manifest.files[0]?.name ?? '';
      const lines = pcapLines(join(x.folder, pcap));
      assert.equal(lines.length, 15, lines.join('\n'));
      assert.ok(lines.every((l) => l.includes(`.${PORT}`)), 'only the filtered port');
      t.diagnostic(`capture create -> the Job's pod done, its tarball verified: ${Date.now() - t0} ms (6 s capturing)`);

      // download: a helper pod on the node mounts the directory and the tarball streams out through
      // pods/exec (API server -> kubelet -> containerd's stream server); its image is busybox, built from
      // Debian's busybox-static and imported (the node has no registry for Retina's default image)
      const bb = (await run('bash', [`${ROOT}hack/node/build.sh`, 'busybox-image'])).stdout.trim();
      const bbRef = (await importImage(bb)).split('\n').find((r) => r.startsWith('docker.io/retina-ts-node/busybox:'));
      assert.ok(bbRef, `the busybox image in containerd after importing ${bb}`);
      const out = mkdtempSync(join(tmpdir(), 'rn-download-'));
      try {
        const t1 = Date.now();
        const dl = await run(`${ROOT}bin/kubectl-retina`, ['capture', 'download', '--name', 'rn-cap', '--namespace', captureNs, '--output', out, '--download-image', bbRef, '--kubeconfig', node.kubeconfig], { timeout: 180_000 })
          .catch((e: unknown) => assert.fail(`capture download: ${String((e as { stderr?: string }).stderr ?? e)}`));
        const got = sh('find', [out, '-type', 'f']).split('\n').filter(Boolean);
        assert.deepEqual(got, [join(out, 'rn-cap', tarballs[0] ?? '')], `the one tarball under <output>/<capture>/: ${dl.stdout}${dl.stderr}`);
        assert.ok(readFileSync(got[0] ?? '').equals(readFileSync(tarball)), 'byte for byte the tarball on the node\'s disk');
        assert.deepEqual(pcapLines(join(extract(got[0] ?? '').folder, pcap)), lines, 'the downloaded pcap holds the same 15 packets');
        const helpers = await listAll<Pod>(client, resources.pods, captureNs, { labelSelector: 'retina.sh/download-for' });
        assert.deepEqual(helpers.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name), [], 'the helper pod deleted');
        t.diagnostic(`capture download through pods/exec with ${bbRef}: ${Date.now() - t1} ms`);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    } finally {
      await client.request('DELETE', objectPath(resources.namespaces, undefined, captureNs)).catch(() => undefined);
      await eventually(`namespace ${captureNs} gone`, 120_000, async () => client.request('GET', objectPath(resources.namespaces, undefined, captureNs)).then(() => false, () => true), 500).catch(() => undefined);
      rmSync(hadLogDir ? '/var/log/retina/captures/rn' : '/var/log/retina', { recursive: true, force: true });
    }
  });
}
