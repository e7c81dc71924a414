/**
 * The API server's own figures, read from its /metrics: apiserver_request_total by verb, resource,
 * subresource and code, and the apiserver_request_duration_seconds histograms, as snapshots whose
 * differences cover one window of the scale bench. Quantiles are histogram_quantile's (linear inside
 * the bucket that holds the rank), so they are as coarse as the API server's buckets.
 */
import type https from 'node:https';
import type { RestConfig } from '../../../src/k8s/index.js';
import { parseExposition } from '../../../test/e2e/exposition.js';

const httpsModule = process.getBuiltinModule('node:https');

/** Verbs that change state: the SLO "mutating API calls" (WATCH, LIST, GET and CONNECT are not). */
export const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION', 'APPLY']);

export interface ApiSnapshot {
  readonly at: number;
  /** `verb resource[/subresource] code` -> requests. */
  readonly requests: ReadonlyMap<string, number>;
  /** `verb resource[/subresource]` -> (upper bound -> cumulative count). */
  readonly durations: ReadonlyMap<string, ReadonlyMap<number, number>>;
}

/** GET of a text path (/metrics) with the client's credentials. */
export async function getText(config: RestConfig, path: string): Promise<string> {
  const u = new URL(config.server + path);
  const ro: https.RequestOptions = { method: 'GET', hostname: u.hostname, port: u.port, path: u.pathname, headers: { Accept: 'text/plain' } };
  await config.authorize(ro);
  return new Promise((resolve, reject) => {
    const req = httpsModule.request(ro, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`GET ${path}: ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`GET ${path}: no answer in 30 s`)));
    req.on('error', reject);
    req.end();
  });
}

const what = (l: Readonly<Record<string, string>>): string => `${l['verb']} ${l['resource']}${l['subresource'] ? '/' + l['subresource'] : ''}`;

export async function apiSnapshot(config: RestConfig): Promise<ApiSnapshot> {
  const text = await getText(config, '/metrics');
  const at = performance.now();
  const requests = new Map<string, number>();
  const durations = new Map<string, Map<number, number>>();
  // Only the two families: the whole exposition is several MB and most of it is not needed.
  const lines = text.split('\n').filter((l) => l.startsWith('apiserver_request_total{') || l.startsWith('apiserver_request_duration_seconds_bucket{'));
  for (const s of parseExposition(lines.join('\n')).samples) {
    if (s.name === 'apiserver_request_total') {
      const k = `${what(s.labels)} ${s.labels['code']}`;
      requests.set(k, (requests.get(k) ?? 0) + s.value);
    } else {
      const k = what(s.labels);
      const le = s.labels['le'] === '+Inf' ? Infinity : Number(s.labels['le']);
      let h = durations.get(k);
      if (!h) durations.set(k, (h = new Map()));
      h.set(le, (h.get(le) ?? 0) + s.value);
    }
  }
  return { at, requests, durations };
}

/** Requests between two snapshots, by `verb resource code`, the zero ones left out. */
export function requestDelta(a: ApiSnapshot, b: ApiSnapshot): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of b.requests) {
    const d = v - (a.requests.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

/** Cumulative buckets of the requests between two snapshots whose `verb resource` passes `pick`, summed. */
export function durationDelta(a: ApiSnapshot, b: ApiSnapshot, pick: (verb: string, resource: string) => boolean): Map<number, number> {
  const out = new Map<number, number>();
  for (const [k, h] of b.durations) {
    const [verb, resource] = k.split(' ') as [string, string];
    if (!pick(verb, resource)) continue;
    const before = a.durations.get(k);
    for (const [le, n] of h) out.set(le, (out.get(le) ?? 0) + n - (before?.get(le) ?? 0));
  }
  return out;
}

/** histogram_quantile over cumulative buckets; undefined when there were no requests. */
export function quantile(q: number, buckets: ReadonlyMap<number, number>): number | undefined {
  const les = [...buckets.keys()].sort((x, y) => x - y);
  const total = buckets.get(Infinity) ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  let prevLe = 0;
  let prevN = 0;
  for (const le of les) {
    const n = buckets.get(le) as number;
    if (n >= rank) {
      if (le === Infinity) return prevLe; // beyond the last finite bound: the bound is all we know
      return prevLe + ((le - prevLe) * (rank - prevN)) / Math.max(1e-9, n - prevN);
    }
    prevLe = le;
    prevN = n;
  }
  return prevLe;
}

/** Requests by `verb resource` (codes summed), at most `top` of the largest, for a JSON line. */
export function byVerbResource(delta: ReadonlyMap<string, number>, top = 30): Record<string, number> {
  const sums = new Map<string, number>();
  for (const [k, v] of delta) {
    const vr = k.slice(0, k.lastIndexOf(' '));
    sums.set(vr, (sums.get(vr) ?? 0) + v);
  }
  return Object.fromEntries([...sums].sort((x, y) => y[1] - x[1]).slice(0, top));
}
