/**
 * Real-node case, the hardened profile: /metrics over HTTPS for a token allowed to get it, scraped by
 * a real Prometheus with a ServiceAccount token and the Secret's CA (see test/node/real-node.test.ts
 * for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { collectionPath, resources, type KubeObject } from '../../../src/k8s/index.js';
import { CHART, profileFile } from '../../chart/helm.js';
import { get } from '../../e2e/agent-process.js';
import { createNamespace, eventually, listAll } from '../../integration/harness.js';
import { NODE_IP, NODE_NAME } from '../node.js';
import { startPrometheus } from '../prometheus.js';
import { IMAGE_VERSION, RELEASE, RELEASE_NS, daemonSetsRes, deploymentsRes } from '../workloads.js';
import { AGENT_PORT, PROM, diagnosis, helmOf, run, type RealNodeSuite } from './suite.js';

/** The hardened profile: HTTPS /metrics with token auth. */
export function hardenedCases(s: RealNodeSuite): void {
  const helm = helmOf(s);
  // ---- the hardened profile: /metrics over TLS for a token allowed to get it ----
  it('the hardened profile: /metrics over HTTPS with token auth; a real Prometheus with a ServiceAccount token and the Secret\'s CA scrapes it, up == 1', async (t) => {
    const { client, imageRef } = s;
    const pki = mkdtempSync(join(tmpdir(), 'rn-tls-'));
    const serverName = `network-observability.${RELEASE_NS}.svc`;
    const ssl = (args: string[]): Promise<unknown> => run('openssl', args, { cwd: pki });
    try {
      await ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=rn-metrics-ca', '-keyout', 'ca.key', '-out', 'ca.crt']);
      await ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${serverName}`, '-keyout', 'tls.key', '-out', 'tls.csr']);
      writeFileSync(join(pki, 'ext.cnf'), `subjectAltName=DNS:${serverName}\nextendedKeyUsage=serverAuth\n`);
      await ssl(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'tls.crt']);
      const b64 = (f: string): string => readFileSync(join(pki, f)).toString('base64');
      await client.request('POST', collectionPath(resources.secrets, RELEASE_NS), {
        body: { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: `${RELEASE}-metrics-tls`, namespace: RELEASE_NS }, data: { 'tls.crt': b64('tls.crt'), 'tls.key': b64('tls.key'), 'ca.crt': b64('ca.crt') } },
      });
      await createNamespace(client, 'monitoring');
      for (const sa of ['prometheus', 'nobody']) {
        await client.request('POST', '/api/v1/namespaces/monitoring/serviceaccounts', { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: 'monitoring' } } });
      }
      const token = async (sa: string): Promise<string> => (await client.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/monitoring/serviceaccounts/${sa}/token`, {
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
      })).status.token;
      const repo = imageRef.slice(0, imageRef.lastIndexOf(':'));
      const t0 = Date.now();
      const inst = await helm(['install', RELEASE, CHART, '-n', RELEASE_NS, '-f', profileFile('hardened'), '--set', `image.linux.repository=${repo}`, '--set', `image.linux.tag=${IMAGE_VERSION}`, '--set', 'image.linux.pullPolicy=Never',
        '--set', 'metricsSecurity.auth.scrapers[0].name=prometheus', '--set', 'metricsSecurity.auth.scrapers[0].namespace=monitoring']);
      assert.equal(inst.code, 0, `helm install -f hardened: ${inst.stderr}\n${inst.stdout}`);
      await eventually('the hardened agent and operator Ready', 300_000, async () => {
        const [ds] = await listAll<KubeObject & { status: { numberReady?: number; desiredNumberScheduled?: number } }>(client, daemonSetsRes, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
        const [op] = await listAll<KubeObject & { spec: { replicas: number }; status: { readyReplicas?: number } }>(client, deploymentsRes, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
        return ds && op && ds.status.desiredNumberScheduled === 1 && ds.status.numberReady === 1 && op.status.readyReplicas === op.spec.replicas;
      }, 250).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`));
      t.diagnostic(`helm install -f hardened -> Ready (HTTPS probes): ${Date.now() - t0} ms`);
      // by hand first: plain HTTP refused, no token 401, a token without the ClusterRole 403, Prometheus' 200
      const ca = readFileSync(join(pki, 'ca.crt'));
      const httpsGet = (auth?: string): Promise<number> => new Promise((resolve, reject) => {
        const req = httpsRequest({ host: NODE_IP, port: AGENT_PORT, path: '/metrics', servername: serverName, ca, timeout: 10_000, headers: auth ? { authorization: `Bearer ${auth}` } : {} }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); });
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
        req.end();
      });
      const promToken = await token('prometheus');
      assert.equal(await httpsGet(), 401, 'no token');
      assert.equal(await httpsGet(await token('nobody')), 403, 'a ServiceAccount not bound to the metrics-reader ClusterRole');
      assert.equal(await httpsGet(promToken), 200, 'Prometheus\' ServiceAccount (metricsSecurity.auth.scrapers)');
      await assert.rejects(get(AGENT_PORT, '/metrics', 5000).then((r) => { if (r.status !== 200) throw new Error(String(r.status)); return r; }), 'no plain HTTP /metrics');
      // the job of docs/metrics.md (Azure Monitor's, static): the Secret's ca.crt and the token as files
      await using prom = await startPrometheus(PROM, (dir) => {
        writeFileSync(join(dir, 'ca.crt'), ca);
        writeFileSync(join(dir, 'token'), promToken);
        return {
          global: { scrape_interval: '2s', evaluation_interval: '2s' },
          scrape_configs: [{
            job_name: 'networkobservability-retina-tls', scheme: 'https', scrape_interval: '2s', scrape_timeout: '2s',
            tls_config: { ca_file: join(dir, 'ca.crt'), server_name: serverName },
            bearer_token_file: join(dir, 'token'),
            static_configs: [{ targets: [`${NODE_IP}:${AGENT_PORT}`] }],
            relabel_configs: [{ target_label: 'instance', replacement: NODE_NAME }],
          }],
        };
      });
      const active = await prom.targets();
      assert.deepEqual(active.map((x) => [x.scrapeUrl, x.health, x.lastError]), [[`https://${NODE_IP}:${AGENT_PORT}/metrics`, 'up', '']]);
      await eventually('up == 1', 30_000, async () => ((await prom.api('/api/v1/query', { query: 'up{job="networkobservability-retina-tls",instance="retina-node"} == 1' })).data as { result: unknown[] }).result.length === 1, 1000);
      const fwd = await eventually('agent series through Prometheus', 30_000, async () => {
        const r = (await prom.api('/api/v1/query', { query: 'networkobservability_forward_count' })).data as { result: unknown[] };
        return r.result.length > 0 && r.result.length;
      }, 1000);
      t.diagnostic(`Prometheus scraped the hardened agent over HTTPS with its ServiceAccount token: up == 1, ${fwd} forward_count series`);
    } finally {
      rmSync(pki, { recursive: true, force: true });
    }
  });
}
