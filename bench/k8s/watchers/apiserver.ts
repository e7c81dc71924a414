/**
 * The API server's load as it reports it, for windows of the agents-scale bench: requests by verb and
 * resource (apiserver_request_total), the latency histograms of requests that are not watches
 * (apiserver_request_duration_seconds), the watch events it sent and their bytes
 * (apiserver_watch_events_total, apiserver_watch_events_sizes), and its own CPU and RSS and etcd's
 * (/proc of the harness's recorded pids). A sampler reads the in-flight gauges
 * (apiserver_current_inflight_requests) and the registered watchers every second for their peaks.
 */
import { readFileSync } from 'node:fs';
import type { RestConfig } from '../../../src/k8s/index.js';
import { parseExposition, type Sample } from '../../../test/e2e/exposition.js';
import { ROOT } from '../../../test/integration/harness.js';
import { MUTATING, getText, quantile } from '../scale/apiserver.js';

const FAMILIES = ['apiserver_request_total{', 'apiserver_request_duration_seconds_bucket{', 'apiserver_watch_events_total{', 'apiserver_watch_events_sizes_sum{',
  'apiserver_current_inflight_requests{', 'apiserver_longrunning_requests{', 'apiserver_registered_watchers{'];

export interface ApiLoad {
  readonly at: number;
  readonly samples: readonly Sample[];
  /** CPU seconds (user + system) of kube-apiserver and etcd so far. */
  readonly cpuS: { readonly apiserver: number; readonly etcd: number };
  readonly rssMB: { readonly apiserver: number; readonly etcd: number };
}

/** utime + stime (s) and RSS (MB) of the harness component `name`, from its recorded pid. */
export function componentUsage(name: 'kube-apiserver' | 'etcd'): { cpuS: number; rssMB: number } {
  try {
    const pid = readFileSync(`${ROOT}.cache/k8s/run/${name}.pid`, 'utf8').trim();
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const rssPages = Number(f[21]);
    return { cpuS: (Number(f[11]) + Number(f[12])) / 100, rssMB: (rssPages * 4096) / 2 ** 20 };
  } catch {
    return { cpuS: NaN, rssMB: NaN };
  }
}

export async function apiLoad(config: RestConfig): Promise<ApiLoad> {
  const text = await getText(config, '/metrics');
  const lines = text.split('\n').filter((l) => FAMILIES.some((f) => l.startsWith(f)));
  const a = componentUsage('kube-apiserver');
  const e = componentUsage('etcd');
  return { at: performance.now(), samples: parseExposition(lines.join('\n')).samples, cpuS: { apiserver: a.cpuS, etcd: e.cpuS }, rssMB: { apiserver: a.rssMB, etcd: e.rssMB } };
}

const sum = (s: readonly Sample[], name: string, match: (l: Readonly<Record<string, string>>) => boolean): number =>
  s.filter((x) => x.name === name && match(x.labels)).reduce((t, x) => t + x.value, 0);

const seriesKey = (x: Sample): string => `${x.name}${JSON.stringify(Object.entries(x.labels).sort())}`;

/**
 * Each series' increase from `a` to `b`, as samples of `b`: a series that went down was reset (the API
 * server restarted in between), so its increase is its value in `b`, as Prometheus' increase() reads it.
 */
function increase(a: ApiLoad, b: ApiLoad): Sample[] {
  const before = new Map(a.samples.map((x) => [seriesKey(x), x.value]));
  return b.samples.map((x) => {
    const v0 = before.get(seriesKey(x)) ?? 0;
    return { ...x, value: x.value >= v0 ? x.value - v0 : x.value };
  });
}

const r3 = (x: number): number => Number(x.toFixed(3));

/** What happened between two readings: requests, latency p99 (s) of mutating and read calls, watch events and bytes, CPU. */
export function apiDelta(a: ApiLoad, b: ApiLoad, watchedResource = 'retinaendpoints'): Record<string, unknown> {
  const seconds = (b.at - a.at) / 1000;
  const d = increase(a, b);
  const byVerb = new Map<string, number>();
  for (const s of d) {
    if (s.name !== 'apiserver_request_total' || s.value <= 0) continue;
    const key = `${s.labels['verb']} ${s.labels['resource'] ?? ''}${s.labels['subresource'] ? '/' + s.labels['subresource'] : ''}`;
    byVerb.set(key, (byVerb.get(key) ?? 0) + s.value);
  }
  const buckets = (mutating: boolean): Map<number, number> => {
    const m = new Map<number, number>();
    for (const s of d) {
      if (s.name !== 'apiserver_request_duration_seconds_bucket') continue;
      const verb = s.labels['verb'] ?? '';
      if (verb === 'WATCH' || verb === 'CONNECT' || MUTATING.has(verb) !== mutating) continue;
      const le = s.labels['le'] === '+Inf' ? Infinity : Number(s.labels['le']);
      m.set(le, (m.get(le) ?? 0) + s.value);
    }
    return m;
  };
  const mut = buckets(true);
  const read = buckets(false);
  const isWatched = (l: Readonly<Record<string, string>>): boolean => l['resource'] === watchedResource;
  const events = sum(d, 'apiserver_watch_events_total', isWatched);
  const eventBytes = sum(d, 'apiserver_watch_events_sizes_sum', isWatched);
  const p99 = (m: Map<number, number>): number | null => {
    const v = quantile(0.99, m);
    return v === undefined ? null : r3(v);
  };
  // A restarted API server is a new process: its CPU counts from zero.
  const cpu = (x: number, y: number): number => (y >= x ? y - x : y);
  return {
    seconds: r3(seconds),
    requests: Object.fromEntries([...byVerb].sort((x, y) => y[1] - x[1]).slice(0, 12)),
    mutatingCalls: mut.get(Infinity) ?? 0, mutatingP99S: p99(mut), readCalls: read.get(Infinity) ?? 0, readP99S: p99(read),
    watchEvents: events, watchEventsPerS: r3(events / seconds), watchEventMB: r3(eventBytes / 2 ** 20),
    apiserverCpuS: r3(cpu(a.cpuS.apiserver, b.cpuS.apiserver)), apiserverCores: r3(cpu(a.cpuS.apiserver, b.cpuS.apiserver) / seconds),
    etcdCpuS: r3(cpu(a.cpuS.etcd, b.cpuS.etcd)), apiserverRssMB: Math.round(b.rssMB.apiserver), etcdRssMB: Math.round(b.rssMB.etcd),
  };
}

/** Peaks of the in-flight gauges and of the registered watchers, read every `everyMs` until disposed. */
export function sampleInflight(config: RestConfig, everyMs = 1000): { peaks(): Record<string, number> } & AsyncDisposable {
  const peak = new Map<string, number>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const { samples } = await apiLoad(config);
        const set = (k: string, v: number): void => void peak.set(k, Math.max(peak.get(k) ?? 0, v));
        for (const s of samples) {
          if (s.name === 'apiserver_current_inflight_requests') set(`inflight_${s.labels['request_kind'] ?? ''}`, s.value);
        }
        set('longrunning', sum(samples, 'apiserver_longrunning_requests', () => true));
        set('watchers_retinaendpoints', sum(samples, 'apiserver_registered_watchers', (l) => l['kind'] === 'RetinaEndpoint' || l['resource'] === 'retinaendpoints'));
      } catch {
        // a reading missed while the API server restarts
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    peaks: () => Object.fromEntries(peak),
    async [Symbol.asyncDispose]() {
      stopped = true;
      await loop;
    },
  };
}
