import { IpCache, type PodEndpoint } from '../../src/cache/index.js';
import type { Informer, ReflectorHandler } from '../../src/k8s/index.js';

/** A hand-filled informer: `set`/`del` notify subscribers as a reflector would. */
export class FakeInformer<S> implements Informer<S> {
  readonly items = new Map<string, S>();
  readonly handlers = new Set<ReflectorHandler<S>>();
  synced = true;
  get size(): number {
    return this.items.size;
  }
  get = (k: string): S | undefined => this.items.get(k);
  list = (): S[] => [...this.items.values()];
  keys = (): string[] => [...this.items.keys()];
  subscribe(h: ReflectorHandler<S>): Disposable {
    this.handlers.add(h);
    for (const [k, v] of this.items) h.added?.(k, v);
    return { [Symbol.dispose]: () => void this.handlers.delete(h) };
  }
  waitForSync = (): Promise<void> => Promise.resolve();
  stats = (): never => ({}) as never;
  set(k: string, v: S): void {
    const old = this.items.get(k);
    this.items.set(k, v);
    for (const h of this.handlers) {
      if (old === undefined) h.added?.(k, v);
      else h.updated?.(k, v, old);
    }
  }
  del(k: string): void {
    const old = this.items.get(k);
    if (old === undefined) return;
    this.items.delete(k);
    for (const h of this.handlers) h.deleted?.(k, old);
  }
}

/** Pods fed as the agent's watch feeds them: the IP cache applies a change before the informer's subscribers hear of it. */
export function fakePodWatch(): { pods: FakeInformer<PodEndpoint>; cache: IpCache; add(p: PodEndpoint): void; del(namespace: string, name: string): void } {
  const pods = new FakeInformer<PodEndpoint>();
  const cache = new IpCache();
  return {
    pods, cache,
    add(p) {
      cache.upsertPod(p);
      pods.set(`${p.namespace}/${p.name}`, p);
    },
    del(namespace, name) {
      cache.deletePod(namespace, name);
      pods.del(`${namespace}/${name}`);
    },
  };
}
