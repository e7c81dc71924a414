/**
 * What `retina-agent diagnose` asks over the network, each within a budget: a running agent's
 * /readyz (plugin states) and /metrics (lost events), at the address the config gives; and the
 * Kubernetes API (where it is, who we are, whether /version answers). Uses node:http's get (not
 * fetch, which Wine's Node cannot run) and never writes anything.
 */
import type { IncomingMessage } from 'node:http';
import { createRestClient, describeKubeconfig, loadRestConfig } from '../k8s/index.js';
import { catalog } from '../metrics/index.js';

// Not ES imports: node:http's ES namespace loads Node's bundled undici (see src/server/index.ts).
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

/**
 * The body of GET `url`, rejected on a connection error or after `timeoutMs`. An https URL is the
 * local agent's metricsTLS port: its certificate is not checked (it names the node's Service, not
 * loopback, and nothing secret is sent).
 */
export function httpGet(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const onResponse = (res: IncomingMessage): void => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    };
    const req = url.startsWith('https:') ? https.get(url, { rejectUnauthorized: false }, onResponse) : http.get(url, onResponse);
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`GET ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** Where a local client reaches the agent: a wildcard listen address means loopback. */
export function agentUrl(host: string, port: number, tls = false): string | undefined {
  if (port === 0) return undefined;
  const h = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `${tls ? 'https' : 'http'}://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

/** `name{labels} value` samples of family `name` in Prometheus text. */
export function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1] as string, x[2] as string]));
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** The running agent's plugin states and lost events; `running: false` (with why) when none answers. */
export async function runningAgent(host: string, port: number, timeoutMs: number, security: { tls: boolean; auth: boolean } = { tls: false, auth: false }): Promise<unknown> {
  const base = agentUrl(host, port, security.tls);
  if (base === undefined) return { running: 'unknown', reason: 'apiServer.port is 0 (the agent picks a free port at start): set apiServer.port to find it' };
  let ready;
  try {
    ready = await httpGet(`${base}/readyz`, timeoutMs);
  } catch (e) {
    return { running: false, url: base, reason: `no agent answers at ${base}: ${(e as Error).message}` };
  }
  const readyz = JSON.parse(ready.body) as { status?: string; plugins?: unknown[] };
  const metrics = await httpGet(`${base}/metrics`, timeoutMs);
  if (metrics.status === 401 || metrics.status === 403) {
    // metricsAuth: diagnose has no scraper's token; /readyz then tells only ready or not.
    return { running: true, url: base, ready: readyz.status, metrics: `protected by metricsAuth (${metrics.status}): plugin states, lost events and plugin failures not read` };
  }
  const lost = samples(metrics.body, catalog.lostEventsCounter.name).map((s) => ({ type: s.labels['type'], reason: s.labels['reason'], count: s.value }));
  const failures = samples(metrics.body, catalog.pluginManagerFailedToReconcile.name).map((s) => ({ ...s.labels, count: s.value }));
  return { running: true, url: base, ready: readyz.status, plugins: readyz.plugins ?? [], lostEvents: lost, pluginFailures: failures };
}

/** Where the API server is, as whom (no secrets), and whether /version answers. */
export async function kubernetesConnection(kubeconfig: string | undefined, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<unknown> {
  if (!kubeconfig && !(env['KUBERNETES_SERVICE_HOST'] && env['KUBERNETES_SERVICE_PORT'])) {
    return { configured: false, reason: 'no --kubeconfig, KUBECONFIG or in-cluster service account: the agent runs standalone' };
  }
  const identity = describeKubeconfig({ kubeconfig, env });
  const config = await loadRestConfig({ kubeconfig, env });
  const client = createRestClient(config, { maxSockets: 1, userAgent: 'retina-agent-diagnose' });
  try {
    const v = await client.request<{ gitVersion?: string; platform?: string }>('GET', '/version', { timeoutMs });
    return { configured: true, source: config.source, server: config.server, identity, reachable: true, version: v.gitVersion, platform: v.platform };
  } catch (e) {
    return { configured: true, source: config.source, server: config.server, identity, reachable: false, error: (e as Error).message };
  } finally {
    client.close();
  }
}
