/**
 * Hubble's GetFlows over the flow ring: history first (the last `number` matching flows, or the
 * first `number` with `first`, within `since`/`until`; every held flow when `number` is 0), then with
 * `follow` the new flows as they are written. A follower writes as fast as its client reads (HTTP/2
 * flow control); when the ring has overwritten flows it had not sent yet, it sends one LostEvent
 * (source HUBBLE_RING_BUFFER) with how many, and carries on from the oldest flow still held. The
 * drain path never waits for a client.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log/index.js';
import { compileFlowFilters, FilterError, type FlowMatcher } from './filter.js';
import { timestamp, timestampMs, toHubbleFlow, type HubbleObject } from './map.js';
import type { FlowRing } from './ring.js';
import type { FlowEnums } from './proto.js';

export type FlowsCall = grpc.ServerWritableStream<HubbleObject, HubbleObject>;

export function grpcError(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() });
}

export interface GetFlowsDeps {
  readonly ring: FlowRing;
  /** flow.proto's enums, for the filter (read from the proto, proto.ts). */
  readonly enums: FlowEnums;
  readonly nodeName: string;
  readonly log: Logger;
  /** Flows sent before a follower yields to the event loop. */
  readonly slice: number;
  /** Messages a follower may have queued for its client before it waits for it. */
  readonly buffered: number;
  /** hubble_flows_lost: flows a follower missed (overwritten before it sent them). */
  readonly lost: { inc(labels: Record<string, string>, n: number): void } | undefined;
  /** Registers an open stream and how to end it (server stop); returns its release. */
  readonly track: (rpc: string, close: () => void) => () => void;
}

export function createGetFlows(d: GetFlowsDeps): (call: FlowsCall) => Promise<void> {
  const { ring, nodeName, log, slice, buffered, track } = d;
  const lostCounter = d.lost;

  const response = (flow: HubbleObject, ms: number): HubbleObject => ({ flow, node_name: nodeName, time: timestamp(ms) });

  /** Resolves when the client has read enough for more writes, or the call is gone. */
  const drained = (call: FlowsCall): Promise<void> => new Promise<void>((resolve) => {
    const done = (): void => {
      call.off('drain', done);
      call.off('cancelled', done);
      call.off('close', done);
      resolve();
    };
    call.on('drain', done);
    call.on('cancelled', done);
    call.on('close', done);
  });

  /** Writes, then waits for the client when HTTP/2's window is full; false once the call is gone. */
  const send = async (call: FlowsCall, msg: HubbleObject, gone: () => boolean): Promise<boolean> => {
    if (gone()) return false;
    if (!call.write(msg)) await drained(call);
    return !gone();
  };

  async function getFlows(call: FlowsCall): Promise<void> {
    const req = call.request;
    let matcher: FlowMatcher;
    try {
      matcher = compileFlowFilters(req['whitelist'], req['blacklist'], d.enums);
    } catch (e) {
      const msg = e instanceof FilterError ? e.message : `bad filter: ${(e as Error).message}`;
      call.emit('error', grpcError(grpc.status.INVALID_ARGUMENT, msg));
      return;
    }
    // `hubble observe --all` asks for 2^64-1 flows: every flow held.
    const asked = Number(req['number'] ?? 0);
    const number = asked >= Number.MAX_SAFE_INTEGER ? 0 : asked;
    const wantsHistory = asked > 0;
    const first = req['first'] === true;
    const follow = req['follow'] === true;
    // Bounds compared as the client sees times: whole (seconds, nanos) of each flow's timestamp.
    const bound = (v: unknown): { s: number; n: number } | undefined => {
      if (timestampMs(v) === undefined) return undefined;
      const b = v as { seconds?: unknown; nanos?: unknown };
      return { s: Number(b.seconds ?? 0), n: Number(b.nanos ?? 0) };
    };
    const since = bound(req['since']);
    const until = bound(req['until']);
    if (!Number.isSafeInteger(number) || number < 0) {
      call.emit('error', grpcError(grpc.status.INVALID_ARGUMENT, `number: ${String(req['number'])} is not a count of flows`));
      return;
    }
    let cancelled = false;
    let wake: (() => void) | undefined;
    const stop = (): void => {
      cancelled = true;
      untrack();
      wake?.();
    };
    const untrack = track('GetFlows', () => {
      if (cancelled) return;
      stop();
      call.end();
    });
    call.on('cancelled', stop);
    call.on('close', stop);
    const gone = (): boolean => cancelled;
    const cmp = (ms: number, b: { s: number; n: number }): number => {
      const ts = timestamp(ms);
      return ts.seconds !== b.s ? ts.seconds - b.s : ts.nanos - b.n;
    };
    const afterUntil = (ms: number): boolean => until !== undefined && cmp(ms, until) > 0;
    const inRange = (ms: number): boolean => (since === undefined || cmp(ms, since) >= 0) && !afterUntil(ms);
    /** The Hubble flow at seq when it is in range and matches, else undefined. */
    const pick = (seq: number): HubbleObject | undefined => {
      const f = ring.at(seq);
      if (f === undefined || !inRange(f.timeMs)) return undefined;
      const h = toHubbleFlow(f, nodeName);
      return matcher.match(h) ? h : undefined;
    };
    try {
      const head = ring.head();
      const tail = ring.tail();
      // History: picked in one synchronous pass (nothing is written meanwhile), then sent.
      const history: [HubbleObject, number][] = [];
      if (!follow || wantsHistory || since !== undefined) {
        if (first || number === 0) {
          for (let s = tail; s < head && (number === 0 || history.length < number); s++) {
            const h = pick(s);
            if (h) history.push([h, (ring.at(s) as { timeMs: number }).timeMs]);
          }
        } else {
          for (let s = head - 1; s >= tail && history.length < number; s--) {
            const h = pick(s);
            if (h) history.push([h, (ring.at(s) as { timeMs: number }).timeMs]);
          }
          history.reverse();
        }
      }
      for (const [h, ms] of history) if (!(await send(call, response(h, ms), gone))) return;
      if (!follow) {
        call.end();
        return;
      }
      let cursor = head;
      while (!cancelled) {
        if (cursor >= ring.head()) {
          await new Promise<void>((resolve) => {
            const cancel = ring.onWrite(resolve);
            wake = (): void => {
              cancel();
              resolve();
            };
          });
          wake = undefined;
          continue;
        }
        const oldest = ring.tail();
        if (cursor < oldest) {
          const lost = oldest - cursor;
          cursor = oldest;
          lostCounter?.inc({}, lost);
          const msg = { lost_events: { source: 'HUBBLE_RING_BUFFER', num_events_lost: lost }, node_name: nodeName, time: timestamp(Date.now()) };
          if (!(await send(call, msg, gone))) return;
          continue;
        }
        const end = Math.min(ring.head(), cursor + slice);
        let waited = false;
        for (; cursor < end && !cancelled; ) {
          const seq = cursor++;
          const f = ring.at(seq);
          if (f === undefined) break;
          if (afterUntil(f.timeMs)) {
            call.end();
            return;
          }
          const h = pick(seq);
          if (h === undefined) continue;
          // grpc-js's writable says "full" at 16 messages; up to `buffered` may wait for the socket
          // (bounded memory per client, and far fewer event-loop turns per flow).
          call.write(response(h, f.timeMs));
          if (call.writableLength >= buffered) {
            // The client reads slower than flows come: wait for it; the ring carries on meanwhile.
            await drained(call);
            waited = true;
            break;
          }
        }
        if (!waited) await new Promise<void>((r) => setImmediate(r));
      }
    } catch (e) {
      log.warn('GetFlows stream failed', { error: (e as Error).message });
      if (!cancelled) call.emit('error', grpcError(grpc.status.INTERNAL, (e as Error).message));
    } finally {
      untrack();
    }
  }

  return getFlows;
}
