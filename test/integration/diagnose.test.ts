/**
 * `retina-agent diagnose --kubeconfig` against the real control plane: the kubernetes section names
 * the server, the context and user and the kinds of credential (never their values), and the
 * version /version answers; against an address where no API server runs, it says it is unreachable
 * within its budget and the report still exits 0.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { ROOT, startCluster, type Cluster } from './harness.js';

interface K8sSection { configured: boolean; server: string; reachable: boolean; version?: string; error?: string; identity: { context?: string; user?: string; credentials?: string[] } }

function diagnose(kubeconfig: string, out: string): Promise<{ k8s: K8sSection; text: string; ms: number }> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    // The agent's HTTP port points nowhere: this test is about the Kubernetes section.
    execFile(`${ROOT}bin/retina-agent`, ['diagnose', '--kubeconfig', kubeconfig, '--output', out, '--timeout', '2s'], { env: { ...process.env, RETINA_APISERVER_PORT: '1' }, timeout: 60_000 }, (err, _o, stderr) => {
      if (err) return reject(new Error(`diagnose failed: ${err.message} ${stderr}`));
      const text = readFileSync(out, 'utf8');
      const s = (JSON.parse(text) as { sections: Record<string, { ok: boolean; data: K8sSection; error?: string }> }).sections['kubernetes'];
      if (!s?.ok) return reject(new Error(`kubernetes section failed: ${s?.error}`));
      resolve({ k8s: s.data, text, ms: Date.now() - start });
    });
  });
}

describe('diagnose: the Kubernetes connection', { timeout: 300_000 }, () => {
  let cluster: Cluster;
  let dir = '';
  before(async () => {
    cluster = await startCluster();
    dir = mkdtempSync(join(tmpdir(), 'rt-diag-k8s-'));
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  it('names the server and identity, and the version /version answers, without credentials', async () => {
    const want = await cluster.client.request<{ gitVersion: string }>('GET', '/version');
    const { k8s, text } = await diagnose(cluster.kubeconfig, join(dir, 'ok.json'));
    assert.equal(k8s.configured, true);
    assert.equal(k8s.reachable, true, k8s.error);
    assert.equal(k8s.version, want.gitVersion);
    assert.equal(k8s.server, cluster.client.config.server);
    const doc = parseYaml(readFileSync(cluster.kubeconfig, 'utf8')) as { 'current-context': string; users: { name: string; user: Record<string, string> }[] };
    assert.equal(k8s.identity.context, doc['current-context']);
    const user = doc.users.find((u) => u.name === k8s.identity.user);
    assert.ok(user, `user ${k8s.identity.user} is in the kubeconfig`);
    assert.deepEqual(k8s.identity.credentials, Object.keys(user.user).sort());
    for (const v of Object.values(user.user)) if (v.length > 8) assert.ok(!text.includes(v), 'no credential value in the report');
  });

  it('says an API server that does not answer is unreachable, within its budget', async () => {
    const doc = parseYaml(readFileSync(cluster.kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
    for (const c of doc.clusters) c.cluster.server = 'https://127.0.0.1:1';
    const kc = join(dir, 'dead-kubeconfig');
    writeFileSync(kc, JSON.stringify(doc));
    const { k8s, ms } = await diagnose(kc, join(dir, 'dead.json'));
    assert.equal(k8s.reachable, false);
    assert.ok(k8s.error, 'the error is reported');
    assert.ok(ms < 30_000, `took ${ms} ms`);
  });
});
