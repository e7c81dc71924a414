/**
 * The scale bench's load: kwok nodes (each with a /24 of its own, so kwok gives its pods addresses
 * from it), and pods created and deleted at a stated rate by a pacer that keeps at most `concurrency`
 * requests in flight. Pods name their node (spec.nodeName, round robin): the scheduler is left out of
 * the path, as its cost is not the operator's.
 */
import { collectionPath, isApiError, objectPath, resources, type RestClient } from '../../../src/k8s/index.js';

export const SCALE_LABEL = 'retina-scale-bench';

/** Node `i`'s name; its podCIDR is 10.(100 + i/256).(i%256).0/24 (1 024 nodes at most). */
export const nodeName = (i: number): string => `scale-node-${i}`;

export async function createNodes(client: RestClient, n: number, concurrency = 16): Promise<number> {
  if (n > 1024) throw new Error(`RETINA_SCALE_NODES: at most 1024 nodes (one /24 each under 10.100.0.0/14), got ${n}`);
  let next = 0;
  let created = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      const i = next++;
      const cidr = `10.${100 + (i >> 8)}.${i & 255}.0/24`;
      try {
        await client.request('POST', collectionPath(resources.nodes), {
          body: {
            apiVersion: 'v1', kind: 'Node',
            metadata: {
              name: nodeName(i), annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
              labels: { type: 'kwok', [SCALE_LABEL]: 'true', 'kubernetes.io/hostname': nodeName(i), 'topology.kubernetes.io/zone': `zone-${i % 3}` },
            },
            spec: { podCIDR: cidr, podCIDRs: [cidr] },
            status: {
              addresses: [{ type: 'InternalIP', address: `172.20.${i >> 8}.${i & 255}` }, { type: 'Hostname', address: nodeName(i) }],
              allocatable: { cpu: '1000', memory: '1Ti', pods: '250' }, capacity: { cpu: '1000', memory: '1Ti', pods: '250' },
            },
          },
        });
        created++;
      } catch (e) {
        if (!isApiError(e, 409)) throw e;
      }
    }
  }));
  return created;
}

export async function deleteNodes(client: RestClient): Promise<void> {
  await client.request('DELETE', collectionPath(resources.nodes), { query: { labelSelector: `${SCALE_LABEL}=true` }, timeoutMs: 600_000 });
}

/** A pod as a ReplicaSet would make it (labels, a template hash), one container, on node `node`. */
export function podBody(name: string, node: string, app: string): unknown {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, labels: { app, [SCALE_LABEL]: 'true', 'pod-template-hash': '7d9c5b6f4' } },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.invalid/app:1' }], terminationGracePeriodSeconds: 30 },
  };
}

export interface PaceResult {
  readonly done: number;
  readonly seconds: number;
  readonly ratePerSecond: number;
  /** Failed requests by HTTP code (or 'other'). */
  readonly failures: Record<string, number>;
}

/**
 * Runs `step(i)` for i in [0, count) at `rate` a second, at most `concurrency` at once, until `count`
 * or `stop()`; a step that cannot start on time starts as soon as a slot frees (the achieved rate says so).
 */
export async function paced(count: number, rate: number, concurrency: number, step: (i: number) => Promise<void>, stop: () => boolean = () => false): Promise<PaceResult> {
  const t0 = performance.now();
  const failures: Record<string, number> = {};
  let inflight = 0;
  let done = 0;
  let slot: (() => void) | undefined;
  const all: Promise<void>[] = [];
  let i = 0;
  for (; i < count && !stop(); i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    while (inflight >= concurrency) await new Promise<void>((r) => (slot = r));
    inflight++;
    all.push(step(i).then(
      () => void done++,
      (e: unknown) => {
        const k = isApiError(e) ? String(e.code) : 'other';
        failures[k] = (failures[k] ?? 0) + 1;
      },
    ).finally(() => {
      inflight--;
      const s = slot;
      slot = undefined;
      s?.();
    }));
  }
  await Promise.all(all);
  const seconds = (performance.now() - t0) / 1000;
  return { done, seconds: Number(seconds.toFixed(1)), ratePerSecond: Number((i / seconds).toFixed(1)), failures };
}

/** The pods the bench made, oldest first, for churn's deletions. */
export class PodRoster {
  readonly #fifo: [ns: string, name: string][] = [];
  #head = 0;
  #serial = 0;

  constructor(
    readonly client: RestClient,
    readonly namespaces: readonly string[],
    readonly nodes: number,
  ) {}

  get size(): number {
    return this.#fifo.length - this.#head;
  }

  async create(): Promise<void> {
    const i = this.#serial++;
    const ns = this.namespaces[i % this.namespaces.length] as string;
    const app = `app-${(i >> 4) % 500}`;
    const name = `${app}-7d9c5b6f4-${i.toString(36).padStart(5, '0')}`;
    await this.client.request('POST', collectionPath(resources.pods, ns), { body: podBody(name, nodeName(i % this.nodes), app) });
    this.#fifo.push([ns, name]);
  }

  /** Deletes the oldest pod (graceful: kwok finishes the deletion, as a kubelet would). */
  async deleteOldest(): Promise<void> {
    if (this.#head >= this.#fifo.length) return;
    const [ns, name] = this.#fifo[this.#head++] as [string, string];
    if (this.#head > 65_536) {
      this.#fifo.splice(0, this.#head);
      this.#head = 0;
    }
    try {
      await this.client.request('DELETE', objectPath(resources.pods, ns, name));
    } catch (e) {
      if (!isApiError(e, 404)) throw e;
    }
  }
}
