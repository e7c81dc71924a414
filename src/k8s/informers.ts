/**
 * Shared informers: one reflector (one LIST+WATCH) per resource and selector, however many consumers
 * read it. Reads (`get`/`list`) and change notifications (`subscribe`) are separate surfaces.
 */
import { Reflector, type ReflectorEvent, type ReflectorHandler, type ReflectorOptions, type ReflectorStats, type RejectReason } from './reflector.js';
import type { Clock } from './clock.js';
import type { RestClient } from './rest.js';
import type { KubeObject } from './resources.js';
import type { Logger } from '../log/index.js';

/** Reads of a synced collection of slim objects. */
export interface Store<S> {
  get(key: string): S | undefined;
  list(): S[];
  keys(): string[];
  readonly size: number;
}

export interface Informer<S> extends Store<S> {
  subscribe(h: ReflectorHandler<S>): Disposable;
  readonly synced: boolean;
  /** Resolves when the first list has been applied (or rejects when `signal` aborts first). */
  waitForSync(signal?: AbortSignal): Promise<void>;
  stats(): ReflectorStats;
}

/** What identifies one shared watch: the reflector's options minus the transport and timing. */
export type InformerSpec<T extends KubeObject, S> = Pick<ReflectorOptions<T, S>, 'resource' | 'namespace' | 'fieldSelector' | 'labelSelector' | 'transform' | 'equal'>;

export interface InformerFactoryOptions {
  readonly client: RestClient;
  readonly log?: Logger;
  readonly clock?: Clock;
  readonly inactivityTimeoutMs?: number;
  readonly watchTimeoutSeconds?: number;
  /** 'stream': initial state through WatchList (sendInitialEvents), falling back to LIST. */
  readonly initialState?: 'list' | 'stream';
  readonly onEvent?: (event: ReflectorEvent, resource: string) => void;
  /** An object was skipped (see Reflector's onRejected). */
  readonly onRejected?: (reason: RejectReason, resource: string) => void;
}

export interface InformerFactory extends AsyncDisposable {
  /** The informer for this resource and selectors; asking twice gives the same one. */
  informer<T extends KubeObject, S>(spec: InformerSpec<T, S>): Informer<S>;
  /** Starts every informer made so far (and any made later at once). */
  start(): void;
  stats(): ReflectorStats[];
}

export function createInformerFactory(opts: InformerFactoryOptions): InformerFactory {
  const reflectors = new Map<string, { r: Reflector<KubeObject, unknown>; transform: unknown }>();
  const running: AsyncDisposable[] = [];
  let started = false;
  let disposed = false;

  return {
    informer<T extends KubeObject, S>(spec: InformerSpec<T, S>): Informer<S> {
      if (disposed) throw new Error('informer factory is disposed');
      const id = [spec.resource.group, spec.resource.plural, spec.namespace ?? '', spec.fieldSelector ?? '', spec.labelSelector ?? ''].join('|');
      let hit = reflectors.get(id);
      if (hit && hit.transform !== spec.transform) throw new Error(`informer ${id} is already shared with another transform`);
      if (!hit) {
        const r = new Reflector<T, S>({
          client: opts.client, resource: spec.resource, namespace: spec.namespace, fieldSelector: spec.fieldSelector,
          labelSelector: spec.labelSelector, transform: spec.transform, equal: spec.equal, clock: opts.clock, log: opts.log,
          inactivityTimeoutMs: opts.inactivityTimeoutMs, watchTimeoutSeconds: opts.watchTimeoutSeconds, onEvent: opts.onEvent, onRejected: opts.onRejected, initialState: opts.initialState,
        });
        hit = { r: r as unknown as Reflector<KubeObject, unknown>, transform: spec.transform };
        reflectors.set(id, hit);
        if (started) running.push(r.start());
      }
      return asInformer(hit.r as unknown as Reflector<T, S>);
    },
    start() {
      if (started || disposed) return;
      started = true;
      for (const { r } of reflectors.values()) running.push(r.start());
    },
    stats: () => [...reflectors.values()].map(({ r }) => r.stats()),
    async [Symbol.asyncDispose]() {
      disposed = true;
      await Promise.all(running.map((r) => r[Symbol.asyncDispose]()));
      await Promise.all([...reflectors.values()].map(({ r }) => r.stop()));
    },
  };
}

function asInformer<T extends KubeObject, S>(r: Reflector<T, S>): Informer<S> {
  return {
    get: (k) => r.get(k),
    list: () => r.list(),
    keys: () => r.keys(),
    get size() {
      return r.size;
    },
    get synced() {
      return r.synced;
    },
    subscribe: (h) => r.subscribe(h),
    stats: () => r.stats(),
    waitForSync(signal) {
      if (r.synced) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const sub = r.subscribe({ synced: () => { queueMicrotask(() => sub[Symbol.dispose]()); resolve(); } }, false);
        signal?.addEventListener('abort', () => { sub[Symbol.dispose](); reject(new Error(`${r.name}: not synced before abort`)); }, { once: true });
      });
    },
  };
}
