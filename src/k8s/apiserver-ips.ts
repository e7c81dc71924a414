/**
 * The API server's addresses, as Retina's apiserver watcher finds them: the kubeconfig (or
 * in-cluster) server host resolved through DNS (every address, IPv4 and IPv6), the ClusterIPs of
 * Service default/kubernetes, and the addresses of its EndpointSlices
 * (kubernetes.io/service-name=kubernetes). Refreshed every `refreshMs` (Retina: 30 s); a source that
 * fails keeps its last answer, so a brief outage does not empty the set.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { normalizeIp } from '../cache/index.js';
import type { Logger } from '../log/index.js';
import { sleep, systemClock, type Clock } from './clock.js';
import { isApiError, type RestClient } from './rest.js';
import { collectionPath, objectPath, resources } from './resources.js';

export interface ApiServerIpsOptions {
  readonly client: RestClient;
  readonly log?: Logger;
  readonly refreshMs?: number;
  readonly clock?: Clock;
  /** DNS resolution (injected in tests): every address of `host`. */
  readonly resolve?: (host: string) => Promise<string[]>;
}

export interface ApiServerIps extends AsyncDisposable {
  /** The current addresses (normalised). */
  ips(): ReadonlySet<string>;
  has(ip: string): boolean;
  /** Called after each refresh that changed the set. */
  onChange(listener: (ips: ReadonlySet<string>) => void): Disposable;
  /** Resolves after the first refresh (whatever it found). */
  readonly ready: Promise<void>;
  /** Refreshes now. */
  refresh(): Promise<void>;
}

interface ServiceLike { spec?: { clusterIP?: string; clusterIPs?: string[] } }
interface SliceList { items: { endpoints?: { addresses?: string[] }[] }[] }

const resolveAll = async (host: string): Promise<string[]> => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** The host of `https://host:port` (IPv6 literals without their brackets). */
export function serverHost(server: string): string {
  const h = new URL(server).hostname;
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

export function startApiServerIps(o: ApiServerIpsOptions): ApiServerIps {
  const clock = o.clock ?? systemClock;
  const refreshMs = o.refreshMs ?? 30_000;
  const resolve = o.resolve ?? resolveAll;
  const host = serverHost(o.client.config.server);
  const abort = new AbortController();
  const listeners = new Set<(ips: ReadonlySet<string>) => void>();
  // The last good answer of each source.
  const parts = { dns: [] as string[], service: [] as string[], slices: [] as string[] };
  const warned = new Set<string>();
  let current: ReadonlySet<string> = new Set();

  const warnOnce = (source: string, e: unknown): void => {
    if (warned.has(source)) return;
    warned.add(source);
    o.log?.warn('cannot read the API server addresses from one source; keeping its last answer', { source, error: (e as Error).message });
  };

  async function fromDns(): Promise<string[]> {
    if (isIP(host)) return [host];
    let last: unknown;
    for (let i = 0; i < 6; i++) {
      try {
        return await resolve(host);
      } catch (e) {
        last = e;
        await sleep(clock, Math.min(4000, 250 * 2 ** i), abort.signal);
        if (abort.signal.aborted) break;
      }
    }
    throw last instanceof Error ? last : new Error(String(last));
  }

  async function fromService(): Promise<string[]> {
    const s = await o.client.request<ServiceLike>('GET', objectPath(resources.services, 'default', 'kubernetes'), { signal: abort.signal, timeoutMs: 10_000 });
    return [s.spec?.clusterIP, ...(s.spec?.clusterIPs ?? [])].filter((x): x is string => Boolean(x) && x !== 'None');
  }

  async function fromSlices(): Promise<string[]> {
    const l = await o.client.request<SliceList>('GET', collectionPath(resources.endpointSlices, 'default'), {
      signal: abort.signal, timeoutMs: 10_000, query: { labelSelector: 'kubernetes.io/service-name=kubernetes' },
    });
    return l.items.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses ?? []));
  }

  async function refresh(): Promise<void> {
    const results = await Promise.allSettled([fromDns(), fromService(), fromSlices()]);
    (['dns', 'service', 'slices'] as const).forEach((k, i) => {
      const r = results[i] as PromiseSettledResult<string[]>;
      if (r.status === 'fulfilled') {
        parts[k] = r.value;
        warned.delete(k);
      } else if (!abort.signal.aborted && !(k === 'slices' && isApiError(r.reason, 404))) {
        warnOnce(k, r.reason);
      }
    });
    const next = new Set([...parts.dns, ...parts.service, ...parts.slices].filter((x) => isIP(x)).map(normalizeIp));
    if (next.size === current.size && [...next].every((x) => current.has(x))) return;
    current = next;
    o.log?.info('API server addresses', { ips: [...next], host });
    for (const l of [...listeners]) {
      try {
        l(current);
      } catch {
        // a listener's failure stays with it
      }
    }
  }

  const ready = refresh().catch(() => undefined);
  const loop = (async () => {
    await ready;
    while (!abort.signal.aborted) {
      await sleep(clock, refreshMs, abort.signal);
      if (abort.signal.aborted) break;
      await refresh().catch(() => undefined);
    }
  })();

  return {
    ips: () => current,
    has: (ip) => current.has(ip),
    onChange(listener) {
      listeners.add(listener);
      return { [Symbol.dispose]: () => void listeners.delete(listener) };
    },
    ready,
    refresh,
    async [Symbol.asyncDispose]() {
      abort.abort();
      listeners.clear();
      await loop;
    },
  };
}
