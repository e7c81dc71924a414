/**
 * GetFlows below grpc-js: responses encoded once per flow (shared by every follower) as gRPC
 * length-prefixed messages, and many of them written to the HTTP/2 stream in one write (gRPC lets
 * messages share DATA frames). grpc-js writes one message per stream write and waits for each write's
 * callback before the next, about 60-70 µs per message on loopback; this path costs the mapping and
 * encoding once (~5 µs) plus a share of one write per `chunkBytes`.
 *
 * grpc-js keeps everything else of the call: the response headers (sent through its sendMetadata),
 * the status and trailers (call.end / an error), deadlines and cancellation (its 'cancelled' event).
 * Only the messages bypass it, written to the call's own HTTP/2 stream. grpc-js has no public way to
 * reach that stream: `rawStreamOf` reads it from the call (@grpc/grpc-js 1.14's
 * ServerWritableStreamImpl.call.stream, the BaseServerInterceptingCall when the server has no
 * interceptors) and answers undefined when it is not there, so the server falls back to grpc-js's
 * writes; server.test.ts checks that this path is the one taken.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Flow } from '../../flow/index.js';
import type { Encoder } from './encode.js';
import { timestamp, toHubbleFlow, type HubbleObject } from '../../flow/hubble/index.js';
import type { FlowRing } from './ring.js';

/** The writable side of an HTTP/2 stream (node:http2 ServerHttp2Stream), as far as we use it. */
export interface RawStream {
  write(chunk: Buffer): boolean;
  once(event: 'drain' | 'close', cb: () => void): unknown;
  off(event: 'drain' | 'close', cb: () => void): unknown;
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
}

/** The HTTP/2 stream under a grpc-js server call, or undefined when grpc-js does not hold it where 1.14 does. */
export function rawStreamOf(call: object): RawStream | undefined {
  const inner = (call as { call?: { stream?: unknown } }).call;
  const s = inner?.stream as Partial<RawStream & { respond: unknown; sendTrailers: unknown; session: unknown }> | undefined;
  if (s === undefined || s === null || typeof s !== 'object') return undefined;
  if (typeof s.write !== 'function' || typeof s.respond !== 'function' || typeof s.sendTrailers !== 'function' || typeof s.once !== 'function') return undefined;
  return s as RawStream;
}

/** One gRPC message: flag byte 0 (not compressed), 4-byte big-endian length, the bytes. */
export function grpcFrame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(message.byteLength + 5);
  out[0] = 0;
  out.writeUInt32BE(message.byteLength, 1);
  out.set(message, 5);
  return out;
}

/** A flow as every follower sends it: its Hubble object (for filters) and its framed GetFlowsResponse. */
export interface EncodedFlow extends PickedFlow {
  readonly seq: number;
  readonly flow: Readonly<Flow>;
  readonly frame: Buffer;
}

export interface EncodedFlows {
  /** The flow at seq, mapped and encoded (once, whoever asks first), or undefined when not held. */
  at(seq: number): EncodedFlow | undefined;
  /** Forgets every encoded flow (when no reader is left). */
  clear(): void;
}

/**
 * `slots` flows are kept mapped, by seq, and encoded the first time one is sent (a flow the filters
 * reject is mapped, never encoded); a reader further behind maps its own.
 */
export function createEncodedFlows(ring: FlowRing, nodeName: string, encode: Encoder, serialize: (msg: HubbleObject) => Uint8Array, slots: number): EncodedFlows {
  const frameOf = (msg: HubbleObject): Buffer => {
    try {
      return encode(msg);
    } catch {
      return grpcFrame(serialize(msg)); // what encode.ts does not write, protobufjs does
    }
  };
  class Entry implements EncodedFlow {
    readonly hubble: HubbleObject;
    readonly timeMs: number;
    #frame: Buffer | undefined;
    constructor(readonly seq: number, readonly flow: Readonly<Flow>) {
      this.hubble = toHubbleFlow(flow, nodeName);
      this.timeMs = flow.timeMs;
    }
    get frame(): Buffer {
      // The response's time is the flow's (the same Timestamp object: written twice, made once).
      return (this.#frame ??= frameOf({ flow: this.hubble, node_name: nodeName, time: this.hubble['time'] ?? timestamp(this.timeMs) }));
    }
  }
  let cache: (Entry | undefined)[] = [];
  return {
    at(seq) {
      const f = ring.at(seq);
      if (f === undefined) return undefined;
      const i = seq % slots;
      const hit = cache[i];
      if (hit !== undefined && hit.seq === seq && hit.flow === f) return hit;
      const e = new Entry(seq, f);
      cache[i] = e;
      return e;
    },
    clear() {
      cache = [];
    },
  };
}

/** One flow picked for a client: its Hubble object, its time, and its framed response when encoded. */
export interface PickedFlow {
  readonly hubble: HubbleObject;
  readonly timeMs: number;
  readonly frame?: Buffer;
}

/**
 * Where a GetFlows call's responses go. `add` queues a flow and answers true when the queue is full;
 * `message` queues another response (a LostEvent); `flush` sends what is queued and resolves when
 * the client can take more (or the call is gone).
 */
export interface FlowSink {
  add(p: PickedFlow): boolean;
  message(msg: HubbleObject): void;
  /** Resolves true when it waited for the client. */
  flush(): Promise<boolean>;
}

/** The GetFlowsResponse for a picked flow. */
export type Respond = (p: PickedFlow) => HubbleObject;

/**
 * Whatever is queued goes to the HTTP/2 stream as one write (its DATA frames share the socket write).
 * A picked flow's frame is its shared one, or `encodeFlow`'s (a masked request's); other messages
 * (LostEvents) are `frameOf`'s.
 */
export function rawSink(stream: RawStream, chunkBytes: number, frameOf: (msg: HubbleObject) => Buffer, encodeFlow: (p: PickedFlow) => Buffer): FlowSink {
  let parts: Buffer[] = [];
  let bytes = 0;
  const drained = (): Promise<void> => new Promise<void>((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.once('drain', done);
    stream.once('close', done);
  });
  const push = (frame: Buffer): boolean => {
    parts.push(frame);
    bytes += frame.length;
    return bytes >= chunkBytes;
  };
  return {
    add: (p) => push(p.frame ?? encodeFlow(p)),
    message: (msg) => void push(frameOf(msg)),
    async flush() {
      if (parts.length === 0) return false;
      const chunk = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, bytes);
      parts = [];
      bytes = 0;
      if (stream.destroyed || stream.writableEnded) return false;
      // false: the client reads slower (HTTP/2's window is full) or the socket holds more than the high-water mark.
      if (stream.write(chunk)) return false;
      await drained();
      return true;
    },
  };
}

/** grpc-js writes each message (one DATA frame and socket write each): the fallback, and the benchmark's baseline. */
export function grpcSink(call: grpc.ServerWritableStream<HubbleObject, HubbleObject>, maxBuffered: number, respond: Respond): FlowSink {
  const drained = (): Promise<void> => new Promise<void>((resolve) => {
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
  return {
    add(p) {
      // grpc-js's writable says "full" at 16 messages; up to `maxBuffered` may wait for the socket.
      call.write(respond(p));
      return call.writableLength >= maxBuffered;
    },
    message: (msg) => void call.write(msg),
    async flush() {
      if (call.writableLength < maxBuffered) return false;
      await drained();
      return true;
    },
  };
}
