/**
 * The metrics server's TLS and Kubernetes auth against the real test API server (TokenReview and
 * SubjectAccessReview under --authorization-mode=RBAC): ServiceAccounts, their RBAC and their tokens
 * (TokenRequest) are made here; a real Prometheus scrapes over HTTPS with a token.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { RestClient } from '../../src/k8s/index.js';
import type { Logger, LogFields } from '../../src/log/index.js';
import { createKubeAuthorizer } from '../../src/server/auth.js';
import { startHttpServer, type HttpServer } from '../../src/server/index.js';
import { makeCa, makeLeaf, type Ca, type Leaf } from '../fixtures/certs.js';
import { runningAgent } from '../../src/cli/diagnose-remote.js';
import { AgentProcess, agentEnv, freePort } from '../e2e/agent-process.js';
import { createNamespace, deleteNamespace, eventually, startCluster, type Cluster } from './harness.js';
import { startOperator } from './operator-helpers.js';

const NS = 'am-metrics';
const ROLE = 'am-metrics-reader';
const BODY = '# TYPE am_up gauge\nam_up 1\n';

let cluster: Cluster;
let dir: string;
let ca1: Ca;
let ca2: Ca;
let leaf1: Leaf;
let leaf2: Leaf;
let certFile: string;
let keyFile: string;
let server: HttpServer;
let authorizer: ReturnType<typeof createKubeAuthorizer>;
const tokens: Record<'reader' | 'other', string> = { reader: '', other: '' };
const logs: { level: string; msg: string; fields: LogFields | undefined }[] = [];
const children: ChildProcess[] = [];

const logger: Logger = {
  debug: (msg, fields) => logs.push({ level: 'debug', msg, fields }),
  info: (msg, fields) => logs.push({ level: 'info', msg, fields }),
  warn: (msg, fields) => logs.push({ level: 'warn', msg, fields }),
  error: (msg, fields) => logs.push({ level: 'error', msg, fields }),
  child: () => logger,
};

interface Reply { status: number; body: string; headers: Record<string, unknown> }

function get(path: string, o: { ca: string; token?: string; authorization?: string; port?: number }): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (o.token !== undefined) headers['Authorization'] = `Bearer ${o.token}`;
  if (o.authorization !== undefined) headers['Authorization'] = o.authorization;
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: o.port ?? server.address.port, path, headers, ca: o.ca, agent: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    }).on('error', reject).end();
  });
}

const pem = (f: string): string => readFileSync(f, 'utf8');

/** Replaces a file the way a careful writer does (a new inode renamed over the old). */
function replace(target: string, from: string): void {
  copyFileSync(from, `${target}.tmp`);
  renameSync(`${target}.tmp`, target);
}

async function serviceAccountToken(client: RestClient, name: string): Promise<string> {
  await client.request('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } } });
  const tr = await client.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${NS}/serviceaccounts/${name}/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return tr.status.token;
}

async function cleanup(client: RestClient): Promise<void> {
  await client.request('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${ROLE}`).catch(() => undefined);
  await client.request('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${ROLE}`).catch(() => undefined);
  await deleteNamespace(client, NS);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'am-metrics-auth-'));
  ca1 = makeCa(dir, 'one');
  ca2 = makeCa(dir, 'two');
  leaf1 = makeLeaf(dir, ca1, 'serving-1');
  leaf2 = makeLeaf(dir, ca2, 'serving-2');
  // Where a Secret volume would be mounted.
  mkdirSync(join(dir, 'tls'));
  certFile = join(dir, 'tls', 'tls.crt');
  keyFile = join(dir, 'tls', 'tls.key');
  copyFileSync(leaf1.cert, certFile);
  copyFileSync(leaf1.key, keyFile);

  cluster = await startCluster();
  const c = cluster.client;
  await cleanup(c);
  await eventually('namespace am-metrics gone', 60_000, async () => {
    try {
      await createNamespace(c, NS);
      return true;
    } catch {
      return false;
    }
  }, 500);
  tokens.reader = await serviceAccountToken(c, 'am-scraper');
  tokens.other = await serviceAccountToken(c, 'am-stranger');
  // What the chart grants Prometheus: get on the non-resource URL /metrics.
  await c.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: ROLE }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] },
  });
  await c.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: ROLE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ROLE }, subjects: [{ kind: 'ServiceAccount', name: 'am-scraper', namespace: NS }],
    },
  });

  authorizer = createKubeAuthorizer({ client: c, log: logger, allowedTtlMs: 60_000, deniedTtlMs: 1000, cacheSize: 4 });
  server = await startHttpServer({
    host: '127.0.0.1', port: 0, log: logger,
    expose: () => Promise.resolve({ contentType: 'text/plain; version=0.0.4', body: BODY }),
    readiness: { ready: () => true, status: () => [{ name: 'linuxutil', state: 'running' }] },
    tls: { certFile, keyFile, pollMs: 1000 },
    auth: authorizer,
  });
});

after(async () => {
  for (const ch of children) ch.kill('SIGKILL');
  await server?.[Symbol.asyncDispose]();
  if (cluster) {
    await cleanup(cluster.client);
    await cluster[Symbol.asyncDispose]();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a token whose ServiceAccount may get /metrics scrapes (200); one without RBAC gets 403; none or a bad one 401', async () => {
  const ca = pem(ca1.cert);
  const ok = await get('/metrics', { ca, token: tokens.reader });
  assert.equal(ok.status, 200);
  assert.equal(ok.body, BODY);
  const forbidden = await get('/metrics', { ca, token: tokens.other });
  assert.equal(forbidden.status, 403);
  assert.ok(!forbidden.body.includes('am_up'));
  for (const o of [{}, { token: 'not-a-token' }, { token: tokens.reader.slice(0, -4) + 'AAAA' }, { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }]) {
    const r = await get('/metrics', { ca, ...o });
    assert.equal(r.status, 401, JSON.stringify(Object.keys(o)));
    assert.match(String(r.headers['www-authenticate']), /^Bearer /);
    assert.ok(!r.body.includes('am_up'));
  }
  // No token ever reaches the log.
  const logged = JSON.stringify(logs);
  assert.ok(!logged.includes(tokens.reader) && !logged.includes(tokens.other));
});

test('reviews are cached: allowed for the long TTL, refused for the short one, in a map of bounded size', async () => {
  const ca = pem(ca1.cert);
  assert.equal((await get('/metrics', { ca, token: tokens.reader })).status, 200);
  const n0 = authorizer.reviews();
  const replies = await Promise.all(Array.from({ length: 5 }, () => get('/metrics', { ca, token: tokens.reader })));
  assert.deepEqual(replies.map((r) => r.status), [200, 200, 200, 200, 200]);
  assert.equal(authorizer.reviews(), n0, 'an allowed token is not reviewed again within its TTL');
  assert.equal((await get('/metrics', { ca, token: tokens.other })).status, 403);
  const n1 = authorizer.reviews();
  assert.equal((await get('/metrics', { ca, token: tokens.other })).status, 403);
  assert.equal(authorizer.reviews(), n1, 'a refused token is not reviewed again at once');
  await new Promise((r) => setTimeout(r, 1200));
  assert.equal((await get('/metrics', { ca, token: tokens.other })).status, 403);
  assert.equal(authorizer.reviews(), n1 + 1, 'a refused token is reviewed again after deniedTtl');
  for (let i = 0; i < 6; i++) assert.equal((await get('/metrics', { ca, token: `junk-${i}` })).status, 401);
  assert.equal(authorizer.cacheEntries(), 4);
});

test('the probes answer without a token but tell only ok/ready; an allowed token sees the details; diagnose finds the agent over HTTPS', async () => {
  const ca = pem(ca1.cert);
  for (const path of ['/healthz', '/readyz']) {
    const open = await get(path, { ca });
    assert.equal(open.status, 200, path);
    assert.deepEqual(Object.keys(JSON.parse(open.body) as object), ['status'], path);
    assert.equal((await get(path, { ca, token: tokens.other })).body, open.body, path);
  }
  assert.deepEqual((JSON.parse((await get('/readyz', { ca, token: tokens.reader })).body) as { plugins: unknown }).plugins, [{ name: 'linuxutil', state: 'running' }]);
  // retina-agent diagnose on the node: finds the agent over HTTPS, and says /metrics is protected.
  assert.deepEqual(await runningAgent('127.0.0.1', server.address.port, 5000, { tls: true, auth: true }), {
    running: true, url: `https://127.0.0.1:${server.address.port}`, ready: 'ready', metrics: 'protected by metricsAuth (401): plugin states, lost events and plugin failures not read',
  });
});

test('a client that does not trust the certificate fails the handshake; a rotated pair is picked up; a bad new pair keeps the old one', async () => {
  await assert.rejects(get('/metrics', { ca: pem(ca2.cert), token: tokens.reader }), (e: NodeJS.ErrnoException) => /UNABLE_TO_VERIFY|SELF_SIGNED|unable to verify/i.test(`${e.code} ${e.message}`));
  // Rotation: the new pair, signed by another CA, replaces the files.
  replace(keyFile, leaf2.key);
  replace(certFile, leaf2.cert);
  await eventually('the rotated certificate served', 10_000, async () => (await get('/metrics', { ca: pem(ca2.cert), token: tokens.reader }).catch(() => undefined))?.status === 200);
  await assert.rejects(get('/metrics', { ca: pem(ca1.cert), token: tokens.reader }));
  assert.ok(logs.some((l) => l.msg === 'metrics TLS certificate reloaded'));
  // A certificate with a key that is not its own: refused, logged, and the serving pair stays.
  const errorsBefore = logs.filter((l) => l.level === 'error').length;
  replace(certFile, leaf1.cert);
  await eventually('the bad pair logged', 10_000, () => logs.filter((l) => l.level === 'error').length > errorsBefore);
  const err = logs.filter((l) => l.level === 'error').at(-1);
  assert.match(err?.msg ?? '', /cannot be used; still serving the previous one/);
  assert.match(String(err?.fields?.['error']), /tls\.key.*does not serve with the certificate/);
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal((await get('/metrics', { ca: pem(ca2.cert), token: tokens.reader })).status, 200);
  // Put the matching pair back (leaf1): served again.
  replace(keyFile, leaf1.key);
  await eventually('leaf1 served again', 10_000, async () => (await get('/metrics', { ca: pem(ca1.cert), token: tokens.reader }).catch(() => undefined))?.status === 200);
});

test('a real Prometheus scrapes over HTTPS with a ServiceAccount token (up == 1); without the token its target is down with 401', async () => {
  const prom = await freePort();
  writeFileSync(join(dir, 'token'), tokens.reader);
  const job = (name: string, auth: boolean): unknown => ({
    job_name: name, scheme: 'https', scrape_interval: '1s', scrape_timeout: '1s',
    tls_config: { ca_file: ca1.cert }, ...(auth ? { authorization: { credentials_file: join(dir, 'token') } } : {}),
    static_configs: [{ targets: [`127.0.0.1:${server.address.port}`] }],
  });
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify({ scrape_configs: [job('am-token', true), job('am-anonymous', false)] }));
  const p = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${prom}`, '--log.level=warn'], { stdio: 'ignore' });
  children.push(p);
  type Target = { labels: { job: string }; health: string; lastError: string };
  const targets = await eventually('both targets scraped', 60_000, async () => {
    try {
      const r = await fetch(`http://127.0.0.1:${prom}/api/v1/targets`);
      const t = ((await r.json()) as { data: { activeTargets: Target[] } }).data.activeTargets;
      return t.length === 2 && t.every((x) => x.health !== 'unknown') ? t : undefined;
    } catch {
      return undefined;
    }
  }, 500);
  const byJob = Object.fromEntries(targets.map((t) => [t.labels.job, t]));
  assert.equal(byJob['am-token']?.health, 'up', JSON.stringify(byJob['am-token']));
  assert.equal(byJob['am-anonymous']?.health, 'down');
  assert.match(byJob['am-anonymous']?.lastError ?? '', /401/);
  const up = await eventually('am_up scraped', 20_000, async () => {
    const r = await fetch(`http://127.0.0.1:${prom}/api/v1/query?query=${encodeURIComponent('up{job="am-token"} == 1 and on() am_up == 1')}`);
    const res = ((await r.json()) as { data: { result: unknown[] } }).data.result;
    return res.length === 1 ? res : undefined;
  }, 500);
  assert.equal(up.length, 1);
});

test('bin/retina-agent and the operator take TLS and auth from their config keys; without a Kubernetes API the agent refuses to start', async () => {
  mkdirSync(join(dir, 'proc'));
  const files = { RETINA_METRICSTLS_CERTFILE: join(dir, 'proc', 'tls.crt'), RETINA_METRICSTLS_KEYFILE: join(dir, 'proc', 'tls.key'), RETINA_METRICSAUTH_ENABLED: 'true' };
  copyFileSync(leaf1.cert, files.RETINA_METRICSTLS_CERTFILE);
  copyFileSync(leaf1.key, files.RETINA_METRICSTLS_KEYFILE);
  const ca = pem(ca1.cert);
  {
    await using agent = new AgentProcess({
      args: ['--kubeconfig', cluster.kubeconfig],
      env: agentEnv({ RETINA_APISERVER_HOST: '127.0.0.1', RETINA_APISERVER_PORT: '0', RETINA_ENABLEDPLUGIN: 'linuxutil', NODE_NAME: 'am-node', ...files }),
    });
    const port = await agent.listening(30_000);
    assert.equal((await get('/metrics', { ca, port })).status, 401);
    assert.equal((await get('/metrics', { ca, port, token: tokens.other })).status, 403);
    const ok = await get('/metrics', { ca, port, token: tokens.reader });
    assert.equal(ok.status, 200);
    assert.match(ok.body, /^networkobservability_/m);
    assert.deepEqual(JSON.parse((await get('/healthz', { ca, port })).body), { status: 'ok' });
    assert.ok(!agent.stderr.includes(tokens.reader));
  }
  {
    await using running = await startOperator(cluster.kubeconfig, files);
    const { metricsServer, probeServer } = running.op;
    assert.deepEqual([metricsServer.scheme, probeServer.scheme], ['https', 'http']);
    assert.equal((await get('/metrics', { ca, port: metricsServer.address.port })).status, 401);
    const ok = await get('/metrics', { ca, port: metricsServer.address.port, token: tokens.reader });
    assert.equal(ok.status, 200);
    assert.match(ok.body, /^workqueue_/m);
  }
  {
    await using agent = new AgentProcess({ env: agentEnv({ RETINA_APISERVER_HOST: '127.0.0.1', RETINA_APISERVER_PORT: '0', RETINA_ENABLEDPLUGIN: 'linuxutil', KUBECONFIG: '', KUBERNETES_SERVICE_HOST: '', ...files }) });
    const exit = await agent.waitExit(15_000);
    assert.equal(exit.code, 1, agent.stderr);
    assert.ok(agent.logLines().some((l) => l.level === 'error' && /metricsAuth\.enabled is true but there is no usable Kubernetes API/.test(l.msg)), agent.stderr);
    assert.ok(!agent.logLines().some((l) => l.msg === 'http server listening'));
  }
});
