/**
 * What an agent watches to fill its IP cache. Remote context: RetinaEndpoints (the operator's slim
 * pods) or RetinaEndpointSlices (the same, batched: endpoint-slices.ts), Services and Nodes. Local context: only this node's Pods, filtered on the server by
 * `spec.nodeName`. One informer per kind; the cache sees adds, updates and deletes.
 */
import type { IpCache, NodeEndpoint, PodEndpoint, ServiceEndpoint } from '../cache/index.js';
import type { Logger } from '../log/index.js';
import { systemClock, type Clock } from './clock.js';
import { createInformerFactory, type Informer, type InformerFactory } from './informers.js';
import type { ReflectorEvent, ReflectorStats, RejectReason } from './reflector.js';
import { isApiError, type RestClient } from './rest.js';
import { collectionPath, resources } from './resources.js';
import { Interner, endpointFromRetinaEndpoint, keyAllowlist, nodeTransform, podTransform, serviceTransform } from './slim.js';
import type { RetinaEndpoint } from './crd/retina-endpoint.js';
import type { RetinaEndpointSlice } from './crd/retina-endpoint-slice.js';
import { podsFromSlices, sameSlice, sliceTransform, type SlimSlice } from './endpoint-slices.js';

export interface AgentWatchOptions {
  readonly client: RestClient;
  readonly cache: IpCache;
  readonly remoteContext: boolean;
  /**
   * Remote context: watch RetinaEndpointSlices (the operator's `retinaEndpointSlices: true`) instead
   * of one RetinaEndpoint per Pod. The same cache entries either way.
   */
  readonly endpointSlices?: boolean;
  /**
   * With endpointSlices: while no RetinaEndpointSlice exists, how often to look whether RetinaEndpoints
   * do (the operator not writing slices: see checkSlicesWritten). Default 5 minutes.
   */
  readonly slicesCheckMs?: number;
  /** This node's name (local context). */
  readonly nodeName?: string | undefined;
  /** Label keys kept from local Pods (remote context: the operator already chose). */
  readonly labelAllowlist?: readonly string[];
  readonly log?: Logger;
  readonly clock?: Clock;
  readonly inactivityTimeoutMs?: number;
  /** Default 'stream' (WatchList): the initial 20 000 objects never sit in memory as whole pages. */
  readonly initialState?: 'list' | 'stream';
  readonly onEvent?: (event: ReflectorEvent, resource: string) => void;
  readonly onRejected?: (reason: RejectReason, resource: string) => void;
  /**
   * The informer factory to watch through (the agent's one factory, src/pipeline, shared with the
   * other watches of the node so no kind is watched twice); the caller owns it. Without it the watch
   * makes and owns its own (the timing and counting options above apply only then).
   */
  readonly factory?: InformerFactory;
}

export interface AgentWatch extends AsyncDisposable {
  /**
   * The pod informer (RetinaEndpoints in remote context, this node's Pods in local context), slimmed
   * to cache entries. Its subscribers run after the cache has applied each change.
   */
  readonly pods: Informer<PodEndpoint>;
  /** Resolves when every informer has listed once. */
  waitForSync(signal?: AbortSignal): Promise<void>;
  synced(): boolean;
  stats(): ReflectorStats[];
}


export function startAgentWatch(o: AgentWatchOptions): AgentWatch {
  const factory: InformerFactory = o.factory ?? createInformerFactory({ client: o.client, log: o.log, clock: o.clock, inactivityTimeoutMs: o.inactivityTimeoutMs, onEvent: o.onEvent, onRejected: o.onRejected, initialState: o.initialState ?? 'stream' });
  const subs: Disposable[] = [];
  const informers: Informer<unknown>[] = [];
  const { cache } = o;
  const byKey = (key: string): [string, string] => {
    const i = key.indexOf('/');
    return [key.slice(0, i), key.slice(i + 1)];
  };
  let pods: Informer<PodEndpoint>;
  if (o.remoteContext) {
    const intern = new Interner();
    if (o.endpointSlices) {
      // The transform reads the slice's previous version from the informer (never called before it exists).
      const slices: Informer<SlimSlice> = factory.informer<RetinaEndpointSlice, SlimSlice>({
        resource: resources.retinaEndpointSlices, equal: sameSlice,
        transform: sliceTransform(intern, (slice, message) => o.log?.warn('RetinaEndpointSlice entry skipped', { slice, error: message }), (key) => slices.get(key)),
      });
      pods = podsFromSlices(slices);
      subs.push(checkSlicesWritten({ client: o.client, slices, log: o.log, clock: o.clock ?? systemClock, everyMs: o.slicesCheckMs ?? 5 * 60_000 }));
    } else {
      pods = factory.informer({ resource: resources.retinaEndpoints, transform: (re: RetinaEndpoint): PodEndpoint | undefined => endpointFromRetinaEndpoint(re, intern) });
    }
  } else {
    if (!o.nodeName) throw new Error('local context needs the node name (NODE_NAME) to watch only this node\'s pods');
    const allow = keyAllowlist(o.labelAllowlist ?? ['*']);
    pods = factory.informer({ resource: resources.pods, fieldSelector: `spec.nodeName=${o.nodeName}`, transform: podTransform(allow, keyAllowlist(['retina.sh'])) });
  }
  informers.push(pods);
  subs.push(pods.subscribe({
    added: (_k, e) => cache.upsertPod(e),
    updated: (_k, e) => cache.upsertPod(e),
    deleted: (k) => void cache.deletePod(...byKey(k)),
  }));
  if (o.remoteContext) {
    const svc: Informer<ServiceEndpoint> = factory.informer({ resource: resources.services, transform: serviceTransform });
    const nodes: Informer<NodeEndpoint> = factory.informer({ resource: resources.nodes, transform: nodeTransform });
    informers.push(svc, nodes);
    subs.push(svc.subscribe({
      added: (_k, e) => cache.upsertService(e),
      updated: (_k, e) => cache.upsertService(e),
      deleted: (k) => void cache.deleteService(...byKey(k)),
    }));
    subs.push(nodes.subscribe({
      added: (_k, e) => cache.upsertNode(e),
      updated: (_k, e) => cache.upsertNode(e),
      deleted: (k) => void cache.deleteNode(k),
    }));
  }
  factory.start();
  o.log?.info('watching the API server', { context: o.remoteContext ? 'remote' : 'local', ...(o.remoteContext ? { endpoints: o.endpointSlices ? 'RetinaEndpointSlices' : 'RetinaEndpoints' } : {}), resources: informers.map((i) => i.stats().resource), server: o.client.config.server });
  return {
    pods,
    waitForSync: async (signal) => {
      await Promise.all(informers.map((i) => i.waitForSync(signal)));
    },
    synced: () => informers.every((i) => i.synced),
    stats: () => factory.stats(),
    async [Symbol.asyncDispose]() {
      for (const s of subs) s[Symbol.dispose]();
      if (!o.factory) await factory[Symbol.asyncDispose]();
    },
  };
}

/** The warning checkSlicesWritten logs (tests look for it). */
export const SLICES_NOT_WRITTEN = 'no RetinaEndpointSlice exists while RetinaEndpoints do: this agent knows no pod';

/**
 * An agent reading RetinaEndpointSlices sees no pod at all when the operator does not write them (its
 * retinaEndpointSlices off, an operator from before slices, the two configured apart): nothing fails,
 * flows simply go without pod names. So once the slices have listed, and again every `everyMs` while
 * there are none, one LIST of a single RetinaEndpoint says whether the operator writes those instead;
 * if it does, a warning names the setting (once, until slices appear; then an info line). No request
 * while slices exist. An agent not allowed to list RetinaEndpoints (403) stops looking.
 */
export function checkSlicesWritten(o: { client: RestClient; slices: Pick<Informer<unknown>, 'waitForSync' | 'stats'>; log: Logger | undefined; clock: Clock; everyMs: number }): Disposable {
  const stop = new AbortController();
  let timer: Disposable | undefined;
  let warned = false;
  const look = async (): Promise<void> => {
    if (stop.signal.aborted) return;
    const slices = o.slices.stats().size;
    if (slices > 0) {
      if (warned) o.log?.info('RetinaEndpointSlices exist now: pods are known again', { slices });
      warned = false;
      return;
    }
    try {
      const l = await o.client.request<{ items?: unknown[] }>('GET', collectionPath(resources.retinaEndpoints), { query: { limit: 1 }, signal: stop.signal });
      if ((l.items?.length ?? 0) > 0 && o.slices.stats().size === 0 && !warned && !stop.signal.aborted) {
        warned = true;
        o.log?.warn(SLICES_NOT_WRITTEN, {
          setting: 'retinaEndpointSlices',
          why: 'this agent reads RetinaEndpointSlices (retinaEndpointSlices: true) and the operator writes only RetinaEndpoints (its retinaEndpointSlices is off, or it predates slices): flows carry no pod names until both have the same retinaEndpointSlices (the chart\'s config.retinaEndpointSlices sets both)',
        });
      }
    } catch (e) {
      if (stop.signal.aborted) return;
      if (isApiError(e, 403)) {
        o.log?.debug('cannot list RetinaEndpoints to check that slices are written; not checking', { error: String(e) });
        stop.abort();
        return;
      }
      o.log?.debug('checking that RetinaEndpointSlices are written failed; trying again later', { error: String(e) });
    }
  };
  const loop = (): void => {
    if (stop.signal.aborted) return;
    void look().finally(() => {
      if (!stop.signal.aborted) timer = o.clock.setTimeout(loop, o.everyMs);
    });
  };
  o.slices.waitForSync(stop.signal).then(loop, () => undefined);
  return {
    [Symbol.dispose]() {
      stop.abort();
      timer?.[Symbol.dispose]();
    },
  };
}
