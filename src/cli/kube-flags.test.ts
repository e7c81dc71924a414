import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { UsageError } from './args.js';
import { runDownload } from './capture/download.js';
import { loadKube, requestTimeoutMs, splitKubeFlags, withKubeFlags } from './kube-flags.js';

const kubeconfig = (o: { current?: string; clusters?: [string, string, Record<string, unknown>?][]; users?: [string, Record<string, unknown>][]; contexts?: [string, string, string, string?][] }): string => stringify({
  apiVersion: 'v1', kind: 'Config',
  ...(o.current ? { 'current-context': o.current } : {}),
  clusters: (o.clusters ?? []).map(([name, server, extra]) => ({ name, cluster: { server, ...extra } })),
  users: (o.users ?? []).map(([name, user]) => ({ name, user })),
  contexts: (o.contexts ?? []).map(([name, cluster, user, namespace]) => ({ name, context: { cluster, user, ...(namespace ? { namespace } : {}) } })),
});

test("splitKubeFlags takes kubectl's flags from anywhere, in every form, and leaves the rest in order", () => {
  const { kube, rest } = splitKubeFlags(['capture', '--context', 'prod', 'create', '-n', 'team', '--name=x', '--kubeconfig=/k', '--as', 'jane', '--cluster=c', '--user', 'u', '--request-timeout', '5s', '--duration', '1m']);
  assert.deepEqual(kube, { context: 'prod', namespace: 'team', kubeconfig: '/k', as: 'jane', cluster: 'c', user: 'u', requestTimeout: '5s' });
  assert.deepEqual(rest, ['capture', 'create', '--name=x', '--duration', '1m']);
  assert.equal(splitKubeFlags(['-nteam']).kube.namespace, 'team');
  assert.equal(splitKubeFlags(['-n=team']).kube.namespace, 'team');
  assert.equal(splitKubeFlags(['--namespace=team', '-n', 'last']).kube.namespace, 'last', 'the last one wins');
  // -A, --name, --namespace-selectors are not kubectl's namespace flag; nothing after -- is touched.
  assert.deepEqual(splitKubeFlags(['-A', '--namespace-selectors', 'a=b', '--', '-n', 'x']), { kube: {}, rest: ['-A', '--namespace-selectors', 'a=b', '--', '-n', 'x'] });
  assert.throws(() => splitKubeFlags(['list', '--context']), (e: unknown) => e instanceof UsageError && /--context needs a value/.test(e.message));
  assert.throws(() => splitKubeFlags(['-n']), /-n needs a value/);
  assert.throws(() => splitKubeFlags(['--namespace=']), /--namespace: an empty value/);
  assert.throws(() => splitKubeFlags(['--request-timeout', 'soon']), /--request-timeout: "soon" is not a duration/);
  // A subcommand called directly: flags still in its argv win over what the main entry passed.
  assert.deepEqual(withKubeFlags(['--name', 'c', '-n', 'b'], { namespace: 'a', context: 'x' }), { kube: { namespace: 'b', context: 'x' }, rest: ['--name', 'c'] });
});

test("requestTimeoutMs reads kubectl's --request-timeout: 0, bare seconds, Go durations", () => {
  assert.equal(requestTimeoutMs('0'), 0);
  assert.equal(requestTimeoutMs('30'), 30_000);
  assert.equal(requestTimeoutMs('500ms'), 500);
  assert.equal(requestTimeoutMs('1m30s'), 90_000);
  assert.equal(requestTimeoutMs('1h'), 3_600_000);
  assert.equal(requestTimeoutMs('1.5s'), 1500);
  for (const bad of ['', '1x', 's', '-1s', '1 s']) assert.throws(() => requestTimeoutMs(bad), UsageError, bad);
});

describe('loadKube: the kubeconfig as kubectl loads it', () => {
  let dir: string;
  let a: string;
  let b: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'kube-flags-'));
    mkdirSync(join(dir, 'b'));
    a = join(dir, 'a.yaml');
    b = join(dir, 'b', 'b.yaml');
    writeFileSync(a, kubeconfig({
      current: 'ctx-a',
      clusters: [['c1', 'https://one.invalid:6443']],
      users: [['u1', { token: 'one' }]],
      contexts: [['ctx-a', 'c1', 'u1', 'team-a'], ['ctx-nons', 'c1', 'u1']],
    }));
    writeFileSync(b, kubeconfig({
      current: 'ctx-b',
      // c1 again: the first file's wins. certificate-authority relative to b's folder.
      clusters: [['c1', 'https://two.invalid:6443'], ['c2', 'https://three.invalid:6443', { 'certificate-authority': 'ca.crt' }]],
      users: [['u2', { token: 'two' }]],
      contexts: [['ctx-b', 'c2', 'u2', 'team-b']],
    }));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('every KUBECONFIG file merged: the first to set a name or current-context wins, missing files are skipped', async () => {
    const env = { KUBECONFIG: [a, join(dir, 'missing.yaml'), b].join(delimiter) };
    const k = await loadKube({}, env);
    assert.equal(k.context, 'ctx-a');
    assert.equal(k.namespace, 'team-a', "the context's namespace, not default");
    assert.equal(k.kubeConfig.getCurrentCluster()?.server, 'https://one.invalid:6443');
    const other = await loadKube({ context: 'ctx-b' }, env);
    assert.equal(other.kubeConfig.getCurrentCluster()?.server, 'https://three.invalid:6443', "a context only the second file has");
    assert.equal(other.namespace, 'team-b');
    assert.equal(other.kubeConfig.getCurrentUser()?.token, 'two');
    assert.equal(other.kubeConfig.getCurrentCluster()?.caFile, join(dir, 'b', 'ca.crt'), "a relative path is against its own file's folder");
    // Reversed order: the other file's current-context and c1 win.
    const rev = await loadKube({ context: 'ctx-a' }, { KUBECONFIG: [b, a].join(delimiter) });
    assert.equal(rev.kubeConfig.getCurrentCluster()?.server, 'https://two.invalid:6443');
    assert.equal((await loadKube({}, { KUBECONFIG: [b, a].join(delimiter) })).context, 'ctx-b');
  });

  test('--namespace, --cluster, --user override the context; no namespace anywhere is default; unknown names are errors', async () => {
    const env = { KUBECONFIG: [a, b].join(delimiter) };
    assert.equal((await loadKube({ namespace: 'mine' }, env)).namespace, 'mine');
    assert.equal((await loadKube({ context: 'ctx-nons' }, env)).namespace, 'default');
    const k = await loadKube({ cluster: 'c2', user: 'u2' }, env);
    assert.equal(k.kubeConfig.getCurrentCluster()?.server, 'https://three.invalid:6443');
    assert.equal(k.kubeConfig.getCurrentUser()?.token, 'two');
    assert.equal(k.namespace, 'team-a', "still the context's namespace");
    await assert.rejects(loadKube({ context: 'nope' }, env), /context "nope" not found/);
    await assert.rejects(loadKube({ cluster: 'nope' }, env), /cluster "nope" not found/);
    await assert.rejects(loadKube({ user: 'nope' }, env), /user "nope" not found/);
  });

  test('--kubeconfig alone replaces KUBECONFIG; without either, ~/.kube/config; with none, a clear error', async () => {
    const k = await loadKube({ kubeconfig: b }, { KUBECONFIG: a });
    assert.equal(k.context, 'ctx-b');
    await assert.rejects(loadKube({ context: 'ctx-a' }, { KUBECONFIG: '', HOME: join(dir, 'nohome') }), /no kubeconfig: set --kubeconfig or KUBECONFIG/);
    const home = join(dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeFileSync(join(home, '.kube', 'config'), kubeconfig({ current: 'h', clusters: [['hc', 'https://home.invalid']], users: [['hu', { token: 'h' }]], contexts: [['h', 'hc', 'hu', 'home-ns']] }));
    const h = await loadKube({}, { HOME: home });
    assert.equal(h.namespace, 'home-ns');
    await assert.rejects(loadKube({}, { KUBECONFIG: join(dir, 'missing.yaml') }), /none of the KUBECONFIG files exists/);
  });
});

describe('the client from loadKube: --as and --request-timeout on the wire', () => {
  let server: Server;
  let url: string;
  let dir: string;
  const seen: IncomingHttpHeaders[] = [];
  before(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      if (req.url?.startsWith('/slow') || req.url?.includes('/pods')) return; // never answers
      res.setHeader('Content-Type', 'application/json');
      res.end('{"kind":"APIVersions","versions":["v1"]}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'kube-flags-wire-'));
    // http on loopback: client-node takes plain http only with insecure-skip-tls-verify.
    writeFileSync(join(dir, 'config'), kubeconfig({ current: 'local', clusters: [['local', url, { 'insecure-skip-tls-verify': true }]], users: [['me', { token: 'secret-token' }]], contexts: [['local', 'local', 'me']] }));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  test('--as is sent as Impersonate-User, next to the user\'s own credentials', async () => {
    const env = { KUBECONFIG: join(dir, 'config') };
    const plain = (await loadKube({}, env)).client();
    await plain.request('GET', '/api');
    plain.close();
    assert.equal(seen.at(-1)?.['impersonate-user'], undefined);
    assert.equal(seen.at(-1)?.authorization, 'Bearer secret-token');
    const as = (await loadKube({ as: 'jane@example.com' }, env)).client();
    await as.request('GET', '/api');
    as.close();
    assert.equal(seen.at(-1)?.['impersonate-user'], 'jane@example.com');
    assert.equal(seen.at(-1)?.authorization, 'Bearer secret-token');
    assert.equal(seen.at(-1)?.['user-agent'], 'kubectl-retina');
  });

  test('--request-timeout ends a request the server does not answer', async () => {
    const k = await loadKube({ requestTimeout: '300ms' }, { KUBECONFIG: join(dir, 'config') });
    assert.equal(k.requestTimeoutMs, 300);
    const c = k.client();
    const t0 = Date.now();
    await assert.rejects(c.request('GET', '/slow'), /no answer in 300 ms/);
    const took = Date.now() - t0;
    assert.ok(took >= 250 && took < 5000, `${took} ms`);
    // A request's own timeout still wins.
    await assert.rejects(c.request('GET', '/slow', { timeoutMs: 100 }), /no answer in 100 ms/);
    c.close();
  });

  test("download's requests (the capture client's, on the same client) take --request-timeout too", { timeout: 20_000 }, async () => {
    let err = '';
    const t0 = Date.now();
    const code = await runDownload(['--name', 'cap', '-n', 'ns', '-o', join(dir, 'out')], {
      stdout: { write: () => true }, stderr: { write: (x: string) => (err += x) }, handleSignals: false,
      env: { KUBECONFIG: join(dir, 'config') }, kube: { requestTimeout: '300ms' },
    });
    assert.equal(code, 1, err);
    assert.match(err, /list the pods of capture ns\/cap.*no answer in 300 ms/is);
    assert.ok(Date.now() - t0 < 10_000, `${Date.now() - t0} ms`);
  });
});
