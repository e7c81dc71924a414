/**
 * Hubble's GetFlows over the flow ring: history first (the last `number` matching flows, or the
 * first `number` with `first`, within `since`/`until`; every held flow when `number` is 0), then with
 * `follow` the new flows as they are written. Responses are encoded once per flow and many go in one
 * HTTP/2 write, below grpc-js (frames.ts). A follower writes as fast as its client reads (HTTP/2
 * flow control); when the ring has overwritten flows it had not sent yet, it sends one LostEvent
 * (source HUBBLE_RING_BUFFER) with how many, and carries on from the oldest flow still held. The
 * drain path never waits for a client.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log/index.js';
import type { Encoder } from './encode.js';
import { checkFilterLimits, compileFlowFilters, FieldMaskError, FilterError, type FieldMask, type FilterLimits, type FlowMatcher } from '../../flow/hubble/index.js';
import { createEncodedFlows, grpcFrame, grpcSink, rawSink, rawStreamOf, type PickedFlow } from './frames.js';
import { timestamp, timestampMs, toHubbleFlow, uncoveredBy, type HubbleObject } from '../../flow/hubble/index.js';
import type { Flow } from '../../flow/index.js';
import type { CelCompiler } from './cel.js';
import { carriedPaths, createProjection, maskPaths, type FlowProjection } from './field-mask.js';
import type { FlowRing } from './ring.js';
import type { FlowEnums } from './proto.js';
import { readStoredFlows, sendForward, sendLast, type StoredFlowSource, type StoredReadStats } from './history.js';

export type FlowsCall = grpc.ServerWritableStream<HubbleObject, HubbleObject>;

/** The status message of the streams a stopping server ends (with UNAVAILABLE). */
export const STOPPING = 'the Hubble server is stopping';

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
  /** grpc-js path: messages a follower may have queued for its client before it waits for it. */
  readonly buffered: number;
  /**
   * GetFlows messages encoded once per flow and written many per HTTP/2 write below grpc-js
   * (frames.ts). false: grpc-js writes each message (the benchmark's baseline).
   */
  readonly rawWrites: boolean;
  /** Raw path: bytes of messages gathered into one write. */
  readonly chunkBytes: number;
  /** GetFlowsResponse's serializer (the grpc-js method definition's). */
  readonly serialize: (msg: HubbleObject) => Uint8Array;
  /** A GetFlowsResponse as one gRPC frame (proto.ts `flowsFrame`). */
  readonly flowsFrame: Encoder;
  /** Compiles a FlowFilter's CEL expressions (cel.ts). */
  readonly cel: CelCompiler;
  /** Compiles flow.Flow field-mask paths (proto.ts `fieldMask`). */
  readonly fieldMask: (paths: readonly string[]) => FieldMask | undefined;
  /** Bounds on one request's filters (limits.ts). */
  readonly filterLimits: FilterLimits;
  /** hubble_flows_lost: flows a follower missed (overwritten before it sent them). */
  readonly lost: { inc(labels: Record<string, string>, n: number): void } | undefined;
  /** Registers an open stream and how to end it (server stop); returns its release. */
  readonly track: (rpc: string, close: () => void) => () => void;
  /** The stored flow-log history read beyond the ring (history.ts; hubble.history.fromExport), or undefined. */
  readonly history?: StoredFlowSource | undefined;
  /** A stored protojson flow as a Hubble flow object (proto.ts `readFlowJson`). */
  readonly readFlow?: (json: Record<string, unknown>) => HubbleObject;
}

export function createGetFlows(d: GetFlowsDeps): (call: FlowsCall) => Promise<void> {
  const { ring, nodeName, log, slice, buffered, track, rawWrites, chunkBytes, serialize } = d;
  const lostCounter = d.lost;

  const encoded = createEncodedFlows(ring, nodeName, d.flowsFrame, serialize, Math.min(ring.capacity, 4096));
  /** A response as one gRPC frame: encode.ts, or protobufjs for what encode.ts does not write. */
  const frameOf = (msg: HubbleObject): Buffer => {
    try {
      return d.flowsFrame(msg);
    } catch {
      return grpcFrame(serialize(msg));
    }
  };
  /** A flow's response under a request's field mask: encode.ts writes only the masked fields (no copy). */
  const maskedFrameOf = (msg: HubbleObject, mask: FieldMask, project: FlowProjection): Buffer => {
    try {
      return d.flowsFrame(msg, mask);
    } catch {
      return grpcFrame(serialize({ ...msg, flow: project(msg['flow'] as HubbleObject) }));
    }
  };
  /** GetFlows calls on the raw path; the encoded flows are forgotten when the last one ends. */
  let rawCalls = 0;
  // The response's time is the flow's (a stored flow's keeps its nanoseconds).
  const timeOf = (p: PickedFlow): unknown => p.hubble['time'] ?? timestamp(p.timeMs);
  const whole = (p: PickedFlow): HubbleObject => ({ flow: p.hubble, node_name: nodeName, time: timeOf(p) });

  async function getFlows(call: FlowsCall): Promise<void> {
    const req = call.request;
    let matcher: FlowMatcher;
    let projection: FlowProjection | undefined;
    /** GetFlowsResponse's mask: the flow's, the response's own fields whole. */
    let responseMask: FieldMask | undefined;
    try {
      checkFilterLimits(req['whitelist'], req['blacklist'], d.filterLimits);
      matcher = compileFlowFilters(req['whitelist'], req['blacklist'], d.enums, { cel: d.cel });
      const paths = maskPaths(req['field_mask']);
      if (paths.length > 0) {
        const flowMask: FieldMask = d.fieldMask(carriedPaths(paths)) ?? new Map();
        projection = createProjection(flowMask);
        responseMask = new Map<string, FieldMask | undefined>([['flow', flowMask], ['node_name', undefined], ['time', undefined]]);
      }
    } catch (e) {
      const msg = e instanceof FilterError ? e.message : e instanceof FieldMaskError ? `field_mask: ${e.message}` : `bad filter: ${(e as Error).message}`;
      call.emit('error', grpcError(grpc.status.INVALID_ARGUMENT, msg));
      return;
    }
    const project = projection;
    // With a mask, each response is made for this call (the shared encoded frames are whole flows).
    const respond = project === undefined ? whole : (p: PickedFlow): HubbleObject => ({ flow: project(p.hubble), node_name: nodeName, time: timeOf(p) });
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
    // The ring as the request found it (no await before the history is picked: nothing is written meanwhile).
    const head = ring.head();
    const tail = ring.tail();
    const store = d.history;
    const readFlow = d.readFlow;
    /** With stored history: the ring's flows, when the request's time range starts before the oldest of them. */
    let held: Readonly<Flow>[] | undefined;
    let ringMin = Infinity;
    if (store !== undefined && readFlow !== undefined && (since !== undefined || until !== undefined) && (!follow || since !== undefined)) {
      held = [];
      for (let s = tail; s < head; s++) {
        const f = ring.at(s);
        if (f === undefined) continue;
        held.push(f);
        if (f.timeMs < ringMin) ringMin = f.timeMs;
      }
      if (since !== undefined && !(since.s * 1000 + since.n / 1e6 < ringMin)) held = undefined; // the ring holds the whole range
    }
    const raw = rawWrites ? rawStreamOf(call) : undefined;
    if (raw) {
      // grpc-js sends the headers (and later the status and trailers); the messages go below it.
      call.sendMetadata(new grpc.Metadata());
      rawCalls++;
    }
    const rm = responseMask;
    const encodeFlow = project === undefined || rm === undefined ? (p: PickedFlow): Buffer => frameOf(whole(p)) : (p: PickedFlow): Buffer => maskedFrameOf(whole(p), rm, project);
    const sink = raw ? rawSink(raw, chunkBytes, frameOf, encodeFlow) : grpcSink(call, buffered, respond);
    let cancelled = false;
    let wake: (() => void) | undefined;
    const stop = (): void => {
      cancelled = true;
      untrack();
      wake?.();
    };
    // Ended by the server's stop: UNAVAILABLE, as Cilium's agent's streams end when it stops (the
    // client sees a transport closing), never OK: Hubble Relay takes an OK end of a follow as the
    // peer's answer being complete and never follows that peer again in this request, even when
    // it comes back; on an error it reports NODE_ERROR and follows the peer again once it answers.
    const untrack = track('GetFlows', () => {
      if (cancelled) return;
      stop();
      call.emit('error', grpcError(grpc.status.UNAVAILABLE, STOPPING));
    });
    call.on('cancelled', stop);
    call.on('close', stop);
    const cmp = (ms: number, b: { s: number; n: number }): number => {
      const ts = timestamp(ms);
      return ts.seconds !== b.s ? ts.seconds - b.s : ts.nanos - b.n;
    };
    const afterUntil = (ms: number): boolean => until !== undefined && cmp(ms, until) > 0;
    const inRange = (ms: number): boolean => (since === undefined || cmp(ms, since) >= 0) && !afterUntil(ms);
    /** The flow at seq when it is in range and matches, else undefined. */
    const pick = (seq: number): PickedFlow | undefined => {
      const f = ring.at(seq);
      if (f === undefined || !inRange(f.timeMs)) return undefined;
      const p: PickedFlow | undefined = raw ? encoded.at(seq) : { hubble: toHubbleFlow(f, nodeName), timeMs: f.timeMs };
      if (p === undefined || !matcher.match(p.hubble)) return undefined;
      // Masked: the whole flow's frame is not this call's; rawSink encodes the masked one.
      return project === undefined ? p : { hubble: p.hubble, timeMs: p.timeMs };
    };
    try {
      // History: picked in one synchronous pass (nothing is written meanwhile), then sent.
      const history: PickedFlow[] = [];
      if (!follow || wantsHistory || since !== undefined) {
        if (first || number === 0) {
          for (let s = tail; s < head && (number === 0 || history.length < number); s++) {
            const p = pick(s);
            if (p) history.push(p);
          }
        } else {
          for (let s = head - 1; s >= tail && history.length < number; s--) {
            const p = pick(s);
            if (p) history.push(p);
          }
          history.reverse();
        }
      }
      // Beyond the ring: the stored flows first (all of them forward, or the last ones the ring lacks).
      const forward = first || number === 0;
      if (held !== undefined && store !== undefined && readFlow !== undefined && (forward || history.length < number)) {
        const why = uncoveredBy({ allow: asFilters(req['whitelist']), deny: asFilters(req['blacklist']) }, store);
        if (why !== undefined) {
          const from = Number.isFinite(ringMin) ? `ask from ${new Date(ringMin).toISOString()} on (the ring's oldest flow)` : 'ask without --since';
          call.emit('error', grpcError(grpc.status.FAILED_PRECONDITION, `since: the time asked for is older than the flows this node's ring holds, and its stored history, ${store.name}, cannot answer it: ${why}. Add filters at least as narrow, or ${from}`));
          return;
        }
        const stats: StoredReadStats = { lines: 0, bad: 0 };
        const stored = readStoredFlows(store, {
          since: since && { seconds: since.s, nanos: since.n }, until: until && { seconds: until.s, nanos: until.n }, matcher, ring: held, nowMs: Date.now(), readFlow, cancelled: () => cancelled,
        }, stats);
        const sent = forward ? await sendForward(stored, number, sink, () => cancelled) : await sendLast(stored, number - history.length, sink, () => cancelled);
        if (stats.bad > 0) log.warn('stored flow-log lines that are not flows were skipped', { source: store.name, skipped: stats.bad, read: stats.lines });
        if (sent === undefined) return;
        if (forward && number > 0) history.splice(Math.max(0, number - sent));
      }
      for (const p of history) {
        if (cancelled) return;
        if (sink.add(p)) await sink.flush();
      }
      await sink.flush();
      if (!follow) {
        if (!cancelled) call.end();
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
          sink.message({ lost_events: { source: 'HUBBLE_RING_BUFFER', num_events_lost: lost }, node_name: nodeName, time: timestamp(Date.now()) });
        }
        const end = Math.min(ring.head(), cursor + slice);
        let full = false;
        for (; cursor < end && !cancelled; ) {
          const seq = cursor++;
          const f = ring.at(seq);
          if (f === undefined) break;
          if (afterUntil(f.timeMs)) {
            await sink.flush();
            if (!cancelled) call.end();
            return;
          }
          const p = pick(seq);
          // Full: send, and when the client reads slower than flows come wait for it; the ring
          // carries on meanwhile (a LostEvent tells the client what it missed).
          if (p !== undefined && sink.add(p)) {
            full = true;
            break;
          }
        }
        if (!(await sink.flush()) && !full) await new Promise<void>((r) => setImmediate(r));
      }
    } catch (e) {
      log.warn('GetFlows stream failed', { error: (e as Error).message });
      if (!cancelled) call.emit('error', grpcError(grpc.status.INTERNAL, (e as Error).message));
    } finally {
      untrack();
      if (raw && --rawCalls === 0) encoded.clear();
    }
  }

  return getFlows;
}

/** A request's FlowFilter list (absent: none). */
const asFilters = (v: unknown): Readonly<Record<string, unknown>>[] => (Array.isArray(v) ? (v as Readonly<Record<string, unknown>>[]) : []);
