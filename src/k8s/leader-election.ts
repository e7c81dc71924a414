/**
 * Leader election on a coordination.k8s.io/v1 Lease (client-go's algorithm). A candidate takes the
 * lease when it is free or its holder has not renewed within leaseDuration (measured on our own clock
 * from when we last saw it change, so clock skew does not matter); the leader renews every retry
 * period and steps down if it cannot renew for renewDeadline. Stopping releases the lease at once so a
 * standby takes over without waiting for expiry. Writes use resourceVersion: two candidates never both win.
 */
import { sleep, systemClock, type Clock } from './clock.js';
import { isApiError, type RestClient } from './rest.js';
import { objectPath, collectionPath, resources } from './resources.js';
import type { Logger } from '../log/index.js';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
interface Lease {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: LeaseSpec;
}

export interface LeaderElectionOptions {
  readonly client: RestClient;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly clock?: Clock;
  readonly log?: Logger;
  /** Called when this candidate becomes leader; `signal` aborts when leadership ends. */
  onStartedLeading(signal: AbortSignal): void;
  onStoppedLeading?(): void;
  onNewLeader?(identity: string): void;
}

export interface LeaderElector extends AsyncDisposable {
  isLeader(): boolean;
  leader(): string | undefined;
}

/** MicroTime as the API writes it: RFC 3339 with microseconds. */
const microTime = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export function startLeaderElection(o: LeaderElectionOptions): LeaderElector {
  const clock = o.clock ?? systemClock;
  const leaseMs = o.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = o.renewDeadlineMs ?? 10_000;
  const retryMs = o.retryPeriodMs ?? 2_000;
  /**
   * Each lease call's bound: the renew deadline, as client-go bounds a renew. Twice the retry period
   * (1 s with a 500 ms retry) was shorter than one GET took from an API server just restarted under
   * load: a standby never took over a dead leader's lease (make test's chaos case, 2026-11-29).
   */
  const callMs = renewDeadlineMs;
  const path = objectPath(resources.leases, o.namespace, o.name);
  const stop = new AbortController();
  let observed: { holder: string; renew: string; at: number } | undefined;
  let leading: AbortController | undefined;
  let lastRenew = 0;
  let leaseRv: string | undefined;
  let currentLeader: string | undefined;

  const spec = (prev: LeaseSpec | undefined, now: number): LeaseSpec => {
    const taking = prev?.holderIdentity !== o.identity;
    return {
      holderIdentity: o.identity,
      leaseDurationSeconds: Math.ceil(leaseMs / 1000),
      acquireTime: taking || !prev?.acquireTime ? microTime(now) : prev.acquireTime,
      renewTime: microTime(now),
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (taking && prev?.holderIdentity ? 1 : 0),
    };
  };

  async function tryAcquireOrRenew(): Promise<boolean> {
    let lease: Lease;
    try {
      lease = await o.client.request<Lease>('GET', path, { timeoutMs: callMs });
    } catch (e) {
      if (!isApiError(e, 404)) throw e;
      const now = clock.now();
      const created = await o.client.request<Lease>('POST', collectionPath(resources.leases, o.namespace), {
        body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: o.name, namespace: o.namespace }, spec: spec(undefined, now) },
        timeoutMs: callMs,
      });
      leaseRv = created.metadata.resourceVersion;
      observed = { holder: o.identity, renew: created.spec.renewTime ?? '', at: now };
      return true;
    }
    // When the GET answered, not when it was sent: a slow answer must not make the holder's lease look older than it is.
    const now = clock.now();
    const holder = lease.spec.holderIdentity ?? '';
    const renew = lease.spec.renewTime ?? '';
    if (!observed || observed.holder !== holder || observed.renew !== renew) observed = { holder, renew, at: now };
    if (holder !== currentLeader) {
      currentLeader = holder || undefined;
      if (holder) o.onNewLeader?.(holder);
    }
    const durMs = (lease.spec.leaseDurationSeconds ?? Math.ceil(leaseMs / 1000)) * 1000;
    if (holder && holder !== o.identity && observed.at + durMs > now) return false;
    const updated = await o.client.request<Lease>('PUT', path, {
      body: { ...lease, spec: spec(lease.spec, now) },
      timeoutMs: callMs,
    });
    leaseRv = updated.metadata.resourceVersion;
    observed = { holder: o.identity, renew: updated.spec.renewTime ?? '', at: now };
    return true;
  }

  function stepDown(why: string): void {
    if (!leading) return;
    (why === 'shutting down' ? o.log?.info : o.log?.warn)?.call(o.log, 'stopped leading', { lease: `${o.namespace}/${o.name}`, identity: o.identity, why });
    leading.abort();
    leading = undefined;
    try {
      o.onStoppedLeading?.();
    } catch (e) {
      o.log?.error('onStoppedLeading failed', { error: (e as Error).message });
    }
  }

  const loop = (async () => {
    while (!stop.signal.aborted) {
      let ok = false;
      try {
        ok = await tryAcquireOrRenew();
      } catch (e) {
        if (!isApiError(e, 409)) o.log?.debug('lease attempt failed', { error: (e as Error).message });
      }
      const now = clock.now();
      if (ok) {
        lastRenew = now;
        if (!leading && !stop.signal.aborted) {
          leading = new AbortController();
          currentLeader = o.identity;
          o.log?.info('became leader', { lease: `${o.namespace}/${o.name}`, identity: o.identity });
          try {
            o.onStartedLeading(leading.signal);
          } catch (e) {
            o.log?.error('onStartedLeading failed', { error: (e as Error).message });
          }
        }
      } else if (leading && now - lastRenew > renewDeadlineMs) {
        stepDown('could not renew the lease before the renew deadline');
      } else if (leading && !ok && observed && observed.holder !== o.identity) {
        stepDown(`lease taken by ${observed.holder}`);
      }
      await sleep(clock, leading ? retryMs : Math.round(retryMs * (1 + Math.random() * 0.2)), stop.signal);
    }
  })();

  return {
    isLeader: () => leading !== undefined,
    leader: () => currentLeader,
    async [Symbol.asyncDispose]() {
      stop.abort();
      await loop;
      const was = leading !== undefined;
      stepDown('shutting down');
      if (!was) return;
      // Release: an empty holder lets a standby take over at its next attempt.
      try {
        const lease = await o.client.request<Lease>('GET', path, { timeoutMs: 3000 });
        if (lease.spec.holderIdentity === o.identity && (!leaseRv || lease.metadata.resourceVersion === leaseRv)) {
          const now = clock.now();
          await o.client.request('PUT', path, {
            body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(now) } },
            timeoutMs: 3000,
          });
          o.log?.info('released the lease', { lease: `${o.namespace}/${o.name}` });
        }
      } catch (e) {
        o.log?.warn('could not release the lease; it will expire', { error: (e as Error).message });
      }
    },
  };
}
