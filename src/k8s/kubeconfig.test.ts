import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { KubeconfigError, kubernetesAvailable, loadRestConfig } from './kubeconfig.js';

describe('loadRestConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-'));
  writeFileSync(join(dir, 'ca.crt'), 'CA');
  writeFileSync(join(dir, 'token'), 'sa-token\n');

  it('reads the in-cluster service account', async () => {
    const rc = await loadRestConfig({ env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: dir });
    assert.equal(rc.server, 'https://[fd00::1]:443');
    const o: https.RequestOptions = { headers: {} };
    await rc.authorize(o);
    assert.equal((o.headers as Record<string, string>)['Authorization'], 'Bearer sa-token');
    assert.equal(String(o.ca), 'CA');
  });

  it('reads a kubeconfig with a token and CA file (relative to the kubeconfig)', async () => {
    writeFileSync(join(dir, 'kc'), `apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: "https://127.0.0.1:6443/", certificate-authority: ca.crt}}]\nusers: [{name: u, user: {token: abc}}]\n`);
    const rc = await loadRestConfig({ kubeconfig: join(dir, 'kc'), env: {} });
    assert.equal(rc.server, 'https://127.0.0.1:6443');
    const o: https.RequestOptions = { headers: {} };
    await rc.authorize(o);
    assert.equal((o.headers as Record<string, string>)['Authorization'], 'Bearer abc');
  });

  it('says when there is nothing to connect to', async () => {
    assert.equal(kubernetesAvailable({ env: {} }), false);
    await assert.rejects(loadRestConfig({ env: {} }), KubeconfigError);
  });
});
