/**
 * The kubectl plugin as people install it: the linux-amd64 single executable `make kubectl-plugin`
 * builds (build/kubectl-plugin/linux-amd64/kubectl-retina), run with a PATH that holds no node and
 * from a folder outside the checkout, against the real control plane. The kubeconfig is two
 * KUBECONFIG files: the first's current-context points at a closed loopback port and names the
 * context to use, whose cluster and user only the second file (the harness's) has; so every command
 * that works took --context, the merge of both files, and -n or the context's namespace.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { collectionPath, isApiError, objectPath, resources, type Capture, type KubeList, type KubeObject, type RestClient } from '../../src/k8s/index.js';
import { migrateValuesText } from '../../src/cli/migrate-values.js';
import { installCrds } from '../../src/operator/index.js';
import { ROOT, createNamespace, deleteNamespace, startCluster, type Cluster } from './harness.js';
import { CRD_DIR, testLog, uniqueId } from './operator-helpers.js';

const run = promisify(execFile);
export const PLUGIN = `${ROOT}build/kubectl-plugin/linux-amd64/kubectl-retina`;

interface KrewPlatform {
  selector: { matchLabels: { os: string; arch: string } };
  uri: string;
  sha256: string;
  files: { from: string; to: string }[];
  bin: string;
}

describe('the krew manifest make kubectl-plugin writes', () => {
  it('names one archive per platform with its sha256, and each archive holds the bin and LICENSE', async () => {
    const dir = `${ROOT}build/kubectl-plugin`;
    const m = parse(readFileSync(join(dir, 'retina.yaml'), 'utf8')) as { apiVersion: string; kind: string; metadata: { name: string }; spec: { version: string; platforms: KrewPlatform[] } };
    assert.equal(m.apiVersion, 'krew.googlecontainertools.github.com/v1alpha2');
    assert.equal(m.kind, 'Plugin');
    assert.equal(m.metadata.name, 'retina');
    assert.match(m.spec.version, /^v\d+\.\d+\.\d+/);
    assert.deepEqual(m.spec.platforms.map((p) => `${p.selector.matchLabels.os}/${p.selector.matchLabels.arch}`), ['linux/amd64', 'linux/arm64', 'windows/amd64']);
    for (const p of m.spec.platforms) {
      const archive = join(dir, p.uri.slice(p.uri.lastIndexOf('/') + 1));
      assert.equal(createHash('sha256').update(readFileSync(archive)).digest('hex'), p.sha256, archive);
      const listed = (await run('tar', ['-tzf', archive])).stdout.split('\n').filter(Boolean).sort();
      assert.deepEqual(listed, p.files.map((f) => f.from).sort(), archive);
      assert.ok(p.files.some((f) => f.from === p.bin), `${p.bin} is unpacked`);
      assert.equal(p.bin, p.selector.matchLabels.os === 'windows' ? 'kubectl-retina.exe' : 'kubectl-retina');
    }
  });
});

interface Job extends KubeObject {
  spec: { template: { spec: { containers: { image: string }[] } } };
}

describe('kubectl-retina single executable, no node on PATH, against a real API server', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const id = uniqueId('kp');
  const ctxNs = `${id}-ctx`;
  const otherNs = `${id}-other`;
  const chartNs = `${id}-chart`;
  const node = `${id}-node-0`;

  before(async () => {
    assert.ok(existsSync(PLUGIN), `${PLUGIN} is missing: run make kubectl-plugin`);
    cluster = await startCluster();
    client = cluster.client;
    await installCrds({ client, dir: CRD_DIR, log: testLog('crd'), only: ['Capture'] });
    for (const n of [ctxNs, otherNs, chartNs]) await createNamespace(client, n);
    // A node without kwok: the capture Jobs are created, their pods never run.
    await client.request('POST', collectionPath(resources.nodes), {
      body: { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { 'kubernetes.io/hostname': node, 'kubernetes.io/os': 'linux' } } },
    });
    dir = mkdtempSync(join(tmpdir(), 'kubectl-plugin-'));
    const harness = parse(readFileSync(cluster.kubeconfig, 'utf8')) as { 'current-context': string; contexts: { name: string; context: { cluster: string; user: string } }[] };
    const real = harness.contexts.find((c) => c.name === harness['current-context'])?.context;
    assert.ok(real, 'the harness kubeconfig has a current context');
    writeFileSync(join(dir, 'first.yaml'), stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'closed',
      clusters: [{ name: 'closed', cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true } }],
      contexts: [
        { name: 'closed', context: { cluster: 'closed', user: real.user } },
        { name: 'plugin', context: { cluster: real.cluster, user: real.user, namespace: ctxNs } },
      ],
    }));
    // No node anywhere on PATH: the PATH is this folder, which holds only the kubeconfig.
    env = { PATH: dir, HOME: dir, KUBECONFIG: [join(dir, 'first.yaml'), cluster.kubeconfig].join(delimiter) };
  });

  after(async () => {
    if (client) {
      for (const n of [ctxNs, otherNs, chartNs]) await deleteNamespace(client, n).catch(() => undefined);
      await client.request('DELETE', objectPath(resources.nodes, undefined, node)).catch(() => undefined);
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  const cli = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    try {
      const r = await run(PLUGIN, args, { cwd: dir, env, timeout: 120_000 });
      return { code: 0, out: r.stdout, err: r.stderr };
    } catch (e) {
      const x = e as { code?: number; stdout?: string; stderr?: string; message: string };
      return { code: typeof x.code === 'number' ? x.code : -1, out: x.stdout ?? '', err: `${x.stderr ?? ''}${typeof x.code === 'number' ? '' : x.message}` };
    }
  };
  const captures = async (ns: string): Promise<string[]> => (await client.request<KubeList<Capture>>('GET', collectionPath(resources.captures, ns))).items.map((c) => c.metadata.name);

  it('runs with no node on PATH: version, and node is not findable', async () => {
    await assert.rejects(run('node', ['--version'], { env, cwd: dir }), (e: NodeJS.ErrnoException) => e.code === 'ENOENT', 'node must not be on the test PATH');
    const v = await cli('version');
    assert.equal(v.code, 0, v.err);
    assert.equal(v.out.trim(), (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version);
  });

  it('migrate-values: the executable writes what the module writes (it loads the plugin lists, whose modules must load in the executable)', async () => {
    const file = `${ROOT}test/fixtures/retina/overrides/typical.yaml`;
    const r = await cli('migrate-values', '-f', file);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, (await migrateValuesText([readFileSync(file, 'utf8')])).yaml);
  });

  it('without --context the first file\'s current-context (a closed port) is used and fails', async () => {
    const l = await cli('capture', 'list');
    assert.equal(l.code, 1, l.out);
    assert.match(l.err, /ECONNREFUSED|127\.0\.0\.1:1/);
  });

  it('create, list, delete a Capture with --context and -n (and the context\'s namespace without -n)', async () => {
    const c = await cli('capture', 'create', '--use-operator', '--context', 'plugin', '-n', otherNs, '--name', 'kp-one', '--node-names', node, '--duration', '1s');
    assert.equal(c.code, 0, c.err);
    assert.deepEqual(await captures(otherNs), ['kp-one']);
    assert.deepEqual(await captures(ctxNs), []);
    // Flags before the subcommand, as kubectl's global flags may stand; no -n: the context's namespace.
    const c2 = await cli('--context=plugin', 'capture', 'create', '--use-operator', '--name', 'kp-two', '--node-names', node);
    assert.equal(c2.code, 0, c2.err);
    assert.match(c2.out, new RegExp(`capture ${ctxNs}/kp-two created`));
    assert.deepEqual(await captures(ctxNs), ['kp-two']);
    const l = await cli('capture', 'list', '--context', 'plugin', '-n', otherNs);
    assert.equal(l.code, 0, l.err);
    assert.match(l.out, new RegExp(`${otherNs}\\s+kp-one\\s+Capture`));
    assert.doesNotMatch(l.out, /kp-two/);
    const lc = await cli('capture', 'list', '--context', 'plugin');
    assert.match(lc.out, new RegExp(`${ctxNs}\\s+kp-two\\s+Capture`));
    assert.doesNotMatch(lc.out, /kp-one/);
    const d = await cli('capture', 'delete', '--context', 'plugin', '-n', otherNs, '--name', 'kp-one');
    assert.equal(d.code, 0, d.err);
    assert.match(d.out, new RegExp(`capture ${otherNs}/kp-one deleted`));
    assert.equal((await cli('capture', 'delete', '--context', 'plugin', '--name', 'kp-two')).code, 0);
    assert.deepEqual(await captures(otherNs), []);
    assert.deepEqual(await captures(ctxNs), []);
  });

  it('--as reaches the API server: impersonating a user with no rights is refused', async () => {
    const l = await cli('capture', 'delete', '--context', 'plugin', '--as', `${id}-nobody`, '--name', 'x');
    assert.equal(l.code, 1, l.out);
    assert.match(l.err, new RegExp(`${id}-nobody`));
  });

  it('why: the Hubble protos from the executable\'s assets; a Service with no endpoints named from the API alone (no agent to ask)', async () => {
    await client.request('POST', collectionPath(resources.services, ctxNs), {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'why-empty' }, spec: { selector: { app: `${id}-none` }, ports: [{ port: 80, targetPort: 8080 }] } },
    });
    const w = await cli('why', '192.0.2.7', 'svc/why-empty:80', '--context', 'plugin', '-o', 'json');
    assert.equal(w.code, 0, w.err);
    const a = JSON.parse(w.out) as { cause: { code: string; summary: string; evidence: string[] }; commandMs: number };
    assert.equal(a.cause.code, 'service-no-endpoints');
    assert.equal(a.cause.summary, `Service ${ctxNs}/why-empty has no endpoints: its selector app=${id}-none matches no pod`);
    assert.ok(a.cause.evidence.includes('no node to ask: neither side is a pod or a Service with endpoints'), a.cause.evidence.join('\n'));
    const bad = await cli('why', '192.0.2.7', 'svc/why-empty:99999', '--context', 'plugin');
    assert.equal(bad.code, 2);
    assert.match(bad.err, /DST: port "99999" is not a number from 1 to 65535/);
    const missing = await cli('why', '192.0.2.7', 'svc/nosuch:80', '--context', 'plugin');
    assert.equal(missing.code, 1);
    assert.match(missing.err, new RegExp(`service ${ctxNs}/nosuch: no such Service`));
  });

  it("the capture image: the installed chart's agent DaemonSet, else --image", async () => {
    const jobImages = async (name: string): Promise<string[]> =>
      (await client.request<KubeList<Job>>('GET', collectionPath(resources.jobs, ctxNs), { query: { labelSelector: `capture-name=${name}` } })).items.map((j) => j.spec.template.spec.containers[0]?.image ?? '');
    // The chart's Linux agent DaemonSet (its labels and container name), scheduled nowhere.
    await client.request('POST', `/apis/apps/v1/namespaces/${chartNs}/daemonsets`, {
      body: {
        apiVersion: 'apps/v1', kind: 'DaemonSet',
        metadata: { name: 'retina-agent-linux', labels: { 'app.kubernetes.io/name': 'retina', 'app.kubernetes.io/instance': 'retina', 'app.kubernetes.io/component': 'agent' } },
        spec: {
          selector: { matchLabels: { 'app.kubernetes.io/name': 'retina', 'app.kubernetes.io/component': 'agent', 'kubernetes.io/os': 'linux' } },
          template: {
            metadata: { labels: { 'app.kubernetes.io/name': 'retina', 'app.kubernetes.io/component': 'agent', 'kubernetes.io/os': 'linux' } },
            spec: { nodeSelector: { 'kubernetes.io/os': 'linux', [`${id}-nowhere`]: 'true' }, containers: [{ name: 'retina-agent', image: 'registry.invalid/retina-ts:from-chart' }] },
          },
        },
      },
    });
    const c = await cli('capture', 'create', '--context', 'plugin', '--name', 'kp-img', '--node-names', node, '--duration', '1s');
    assert.equal(c.code, 0, c.err);
    assert.match(c.err, new RegExp(`capture image registry.invalid/retina-ts:from-chart \\(from daemonset ${chartNs}/retina-agent-linux\\)`));
    assert.deepEqual(await jobImages('kp-img'), ['registry.invalid/retina-ts:from-chart']);
    assert.equal((await cli('capture', 'delete', '--context', 'plugin', '--name', 'kp-img')).code, 0);
    const f = await cli('capture', 'create', '--context', 'plugin', '--name', 'kp-flag', '--node-names', node, '--image', 'registry.invalid/mine:1');
    assert.equal(f.code, 0, f.err);
    assert.deepEqual(await jobImages('kp-flag'), ['registry.invalid/mine:1']);
    assert.equal((await cli('capture', 'delete', '--context', 'plugin', '--name', 'kp-flag')).code, 0);
    await client.request('DELETE', `/apis/apps/v1/namespaces/${chartNs}/daemonsets/retina-agent-linux`).catch((e: unknown) => {
      if (!isApiError(e, 404)) throw e;
    });
  });
});
