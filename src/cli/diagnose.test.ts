import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadPlugins, detect, type Platform } from '../platform/index.js';
import { loadAgentConfig } from './agent-config.js';
import { configDocument, main } from './diagnose.js';
import { hostFacts } from './diagnose-host.js';
import { agentUrl, kubernetesConnection, runningAgent, samples } from './diagnose-remote.js';
import { renderText } from './diagnose-text.js';
import { REDACTED } from './redact.js';
import { tokenSubject } from '../k8s/index.js';

let dir = '';
before(() => (dir = mkdtempSync(join(tmpdir(), 'rt-diag-unit-'))));
after(() => rmSync(dir, { recursive: true, force: true }));

async function linuxPlatform(): Promise<Platform> {
  return { info: await detect('linux'), plugins: await loadPlugins('linux') };
}

describe('diagnose: config in force', () => {
  it('shows each key with its source and redacts secret-ish unknown keys from the file and the environment', async () => {
    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'logLevel: debug\nazure:\n  clientSecret: s3cr3t\nenablePodLevl: true\n');
    const loaded = await loadAgentConfig(await linuxPlatform(), file, { RETINA_APISERVER_PORT: '1234', RETINA_STORAGE_PASSWORD: 'pw' });
    const doc = configDocument(loaded, file) as { file: string; values: Record<string, { value: unknown; source: string }>; unknownKeys: { key: string; value: unknown; didYouMean?: string }[] };
    assert.equal(doc.file, file);
    assert.deepEqual(doc.values['logLevel'], { value: 'debug', source: 'file' });
    assert.deepEqual(doc.values['apiServer.port'], { value: 1234, source: 'env' });
    assert.deepEqual(doc.values['enablePodLevel'], { value: false, source: 'default' });
    const unknown = Object.fromEntries(doc.unknownKeys.map((u) => [u.key, u.value]));
    assert.deepEqual(unknown, { 'azure.clientSecret': REDACTED, enablePodLevl: true, RETINA_STORAGE_PASSWORD: REDACTED });
    assert.ok(!JSON.stringify(doc).includes('s3cr3t') && !JSON.stringify(doc).includes('"pw"'));
  });
});

describe('diagnose: text rendering', () => {
  it('renders lists of records as tables, maps of records with a key column, and failed sections with their error', () => {
    const text = renderText({
      schema: 's', os: 'linux',
      sections: {
        interfaces: { ok: true, tookMs: 3, data: [{ index: 1, name: 'lo', addresses: ['127.0.0.1/8'] }, { index: 2, name: 'eth0', mtu: 1500, addresses: [] }] },
        config: { ok: true, tookMs: 1, data: { values: { logLevel: { value: 'info', source: 'default' }, 'apiServer.port': { value: 1, source: 'env' } } } },
        agent: { ok: false, tookMs: 3000, error: 'no answer within 3000 ms', timedOut: true },
        tc: { ok: false, tookMs: 1, error: 'EPERM', timedOut: false },
      },
    });
    const lines = text.split('\n');
    assert.ok(lines.includes('== interfaces (ok, 3 ms) =='));
    assert.match(text, /^ {2}INDEX +NAME +ADDRESSES +MTU$/m);
    assert.match(text, /^ {2}1 +lo +127\.0\.0\.1\/8 +-$/m);
    assert.match(text, /^ {2}2 +eth0 +\(none\) +1500$/m);
    assert.match(text, /^ {4}KEY +VALUE +SOURCE$/m);
    assert.match(text, /^ {4}apiServer\.port +1 +env$/m);
    assert.ok(lines.includes('== agent (timed out, 3000 ms) =='));
    assert.ok(lines.includes('== tc (failed, 1 ms) ==') && lines.includes('  error: EPERM'));
  });
});

describe('diagnose: a running agent', () => {
  let server: Server;
  let port = 0;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/readyz') res.end(JSON.stringify({ status: 'not ready', plugins: [{ name: 'dns', state: 'failed', lastError: 'EPERM' }] }));
      else res.end('# HELP x\ncontrolplane_networkobservability_lost_events_counter{type="kernel",reason="ring_full"} 7\ncontrolplane_networkobservability_lost_events_counter_other 1\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  after(() => server.close());

  it('reads plugin states from /readyz and lost events from /metrics', async () => {
    const r = (await runningAgent('127.0.0.1', port, 2000)) as Record<string, unknown>;
    assert.equal(r['running'], true);
    assert.equal(r['ready'], 'not ready');
    assert.deepEqual(r['plugins'], [{ name: 'dns', state: 'failed', lastError: 'EPERM' }]);
    assert.deepEqual(r['lostEvents'], [{ type: 'kernel', reason: 'ring_full', count: 7 }]);
  });

  it('says no agent runs when nothing answers, and cannot find one on port 0', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const free = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    assert.equal(((await runningAgent('127.0.0.1', free, 2000)) as { running: unknown }).running, false);
    assert.equal(((await runningAgent('0.0.0.0', 0, 2000)) as { running: unknown }).running, 'unknown');
  });

  it('reaches a wildcard listen address on loopback', () => {
    assert.deepEqual([agentUrl('0.0.0.0', 1), agentUrl('::', 2), agentUrl('10.0.0.1', 3), agentUrl('x', 0)], ['http://127.0.0.1:1', 'http://[::1]:2', 'http://10.0.0.1:3', undefined]);
  });

  it('parses Prometheus samples of one family only', () => {
    assert.deepEqual(samples('a{x="1",y="q\\"z"} 2\nab 3\na 4\n', 'a'), [{ labels: { x: '1', y: 'q\\"z' }, value: 2 }, { labels: {}, value: 4 }]);
  });
});

describe('diagnose: Kubernetes and host', () => {
  it('says when no Kubernetes API is configured', async () => {
    assert.equal(((await kubernetesConnection(undefined, {}, 1000)) as { configured: boolean }).configured, false);
  });

  it('names a kubeconfig identity without secrets, and reports an API server that does not answer', async () => {
    const kc = join(dir, 'kubeconfig');
    writeFileSync(kc, 'apiVersion: v1\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: tok-s3cr3t}}]\n');
    const r = (await kubernetesConnection(kc, {}, 1000)) as Record<string, unknown>;
    assert.equal(r['configured'], true);
    assert.equal(r['reachable'], false);
    assert.equal(r['server'], 'https://127.0.0.1:1');
    assert.deepEqual(r['identity'], { context: 'c', cluster: 'k', user: 'u', credentials: ['token'], certificateSubject: undefined });
    assert.ok(!JSON.stringify(r).includes('tok-s3cr3t'));
  });

  it("reads a service account token's subject only", () => {
    const jwt = ['e30', Buffer.from(JSON.stringify({ sub: 'system:serviceaccount:kube-system:retina' })).toString('base64url'), 'sig'].join('.');
    assert.equal(tokenSubject(jwt), 'system:serviceaccount:kube-system:retina');
    assert.equal(tokenSubject('garbage'), undefined);
  });

  it('falls back to node:os when systeminformation does not answer in time, and says so', async () => {
    const never = (): Promise<never> => new Promise(() => {});
    const fake = { osInfo: never, cpu: never, mem: never, networkInterfaces: never } as unknown as typeof import('systeminformation');
    const start = Date.now();
    const r = (await hostFacts(400, () => Promise.resolve(fake))) as { os: { kernel: string }; memory: { totalBytes: number }; notes: string[] };
    assert.ok(Date.now() - start < 1000, 'the four calls wait side by side, not one after the other');
    assert.ok(r.os.kernel.length > 0 && r.memory.totalBytes > 0);
    assert.equal(r.notes.length, 4);
    assert.ok(r.notes.some((n) => /osInfo: no answer within 320 ms; node:os used/.test(n)), r.notes.join('; '));
  });
});

describe('diagnose: flags', () => {
  it('exits 2 for bad flags', async () => {
    const err = process.stderr.write;
    process.stderr.write = () => true;
    try {
      for (const argv of [['--format', 'xml'], ['--timeout', '1ms'], ['--bogus'], ['extra']]) assert.equal(await main(argv, {}), 2, argv.join(' '));
    } finally {
      process.stderr.write = err;
    }
  });

  it('writes the JSON report to --output and exits 0', async () => {
    const out = join(dir, 'report.json');
    assert.equal(await main(['--output', out, '--timeout', '2s'], { RETINA_APISERVER_PORT: '1' }), 0);
    const report = JSON.parse((await import('node:fs')).readFileSync(out, 'utf8')) as { schema: string; sections: Record<string, { ok: boolean }> };
    assert.equal(report.schema, 'retina-ts/diagnose/v1');
    assert.deepEqual(Object.keys(report.sections), ['host', 'config', 'agent', 'kubernetes', 'kernel', 'interfaces', 'tc', 'bpf']);
  });

  it('reports a bad configuration in its section and still exits 0 with the rest', async () => {
    const out = join(dir, 'bad.json');
    assert.equal(await main(['--output', out, '--timeout', '2s'], { RETINA_APISERVER_PORT: '99999' }), 0);
    const report = JSON.parse((await import('node:fs')).readFileSync(out, 'utf8')) as { sections: Record<string, { ok: boolean; error?: string }> };
    assert.equal(report.sections['config']?.ok, false);
    assert.match(report.sections['config']?.error ?? '', /apiServer\.port.*99999/);
    assert.equal(report.sections['kernel']?.ok, true);
  });
});
