/**
 * What the scale bench sees of the cluster, on one clock: when each of its pods became an endpoint
 * (Running with an IP: src/k8s's podIsEndpoint, the operator's own test), when its RetinaEndpoint
 * appeared, and which are missing or left over. Two cluster-wide watches (pods with the bench's label,
 * RetinaEndpoints), the objects slimmed to a boolean.
 */
import { Reflector, podIsEndpoint, resources, type PodWire, type RestClient, type RetinaEndpoint } from '../../../src/k8s/index.js';
import { SCALE_LABEL } from './load.js';

export interface Backlog {
  /** Endpoint pods without a RetinaEndpoint. */
  readonly missing: number;
  /** RetinaEndpoints of the bench's namespaces without an endpoint pod. */
  readonly extra: number;
  /** Age in ms of the oldest missing one (0 when none). */
  readonly oldestMissingMs: number;
  readonly pods: number;
  readonly endpoints: number;
}

export class Observer implements AsyncDisposable {
  /** Endpoint pods: key -> when it became one. */
  readonly eligibleAt = new Map<string, number>();
  /** RetinaEndpoints: key -> when it appeared. */
  readonly endpointAt = new Map<string, number>();
  /** Pod became an endpoint -> its RetinaEndpoint seen, in ms, for pods that became endpoints after `measureFrom`. */
  latencies: { at: number; ms: number }[] = [];
  measureFrom = Infinity;
  readonly #pods: Reflector<PodWire, boolean>;
  readonly #res: Reflector<RetinaEndpoint, true>;
  readonly #stops: AsyncDisposable[] = [];

  constructor(client: RestClient, readonly namespacePrefix: string) {
    this.#pods = new Reflector<PodWire, boolean>({ client, resource: resources.pods, labelSelector: `${SCALE_LABEL}=true`, transform: (p) => podIsEndpoint(p) });
    this.#res = new Reflector<RetinaEndpoint, true>({ client, resource: resources.retinaEndpoints, transform: (r) => (r.metadata.namespace?.startsWith(namespacePrefix) ? true : undefined) });
    const pod = (k: string, eligible: boolean): void => {
      if (!eligible) {
        this.eligibleAt.delete(k);
        return;
      }
      if (this.eligibleAt.has(k)) return;
      const now = performance.now();
      this.eligibleAt.set(k, now);
      const re = this.endpointAt.get(k);
      // The RetinaEndpoint's event came in first (both arrive on this one loop): latency under a watch delivery.
      if (re !== undefined && now >= this.measureFrom) this.latencies.push({ at: now, ms: 0 });
    };
    this.#pods.subscribe({ added: pod, updated: pod, deleted: (k) => void this.eligibleAt.delete(k) });
    this.#res.subscribe({
      added: (k) => {
        const now = performance.now();
        this.endpointAt.set(k, now);
        const since = this.eligibleAt.get(k);
        if (since !== undefined && since >= this.measureFrom) this.latencies.push({ at: since, ms: now - since });
      },
      deleted: (k) => void this.endpointAt.delete(k),
    });
  }

  async start(): Promise<void> {
    this.#stops.push(this.#pods.start(), this.#res.start());
    const until = Date.now() + 600_000;
    while (!(this.#pods.synced && this.#res.synced)) {
      if (Date.now() > until) throw new Error('the bench\'s own watches did not sync in 10 minutes');
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  get pods(): number {
    return this.#pods.size;
  }

  backlog(): Backlog {
    const now = performance.now();
    let missing = 0;
    let oldest = now;
    for (const [k, at] of this.eligibleAt) {
      if (this.endpointAt.has(k)) continue;
      missing++;
      if (at < oldest) oldest = at;
    }
    let extra = 0;
    for (const k of this.endpointAt.keys()) if (!this.eligibleAt.has(k)) extra++;
    return { missing, extra, oldestMissingMs: Math.round(now - oldest), pods: this.eligibleAt.size, endpoints: this.endpointAt.size };
  }

  /** Missing endpoints that became endpoint pods before `t` (performance.now() time). */
  missingBefore(t: number): number {
    let n = 0;
    for (const [k, at] of this.eligibleAt) if (at < t && !this.endpointAt.has(k)) n++;
    return n;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const s of this.#stops) await s[Symbol.asyncDispose]();
  }
}
