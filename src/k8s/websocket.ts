/**
 * The client side of the API server's WebSocket subresources (`pods/exec`, `pods/portforward`), on
 * the same RestConfig (TLS, token, impersonation) as every request of the REST transport: the
 * upgrade (one HTTP request, answered 101 with our key's accept), and RFC 6455 frames, parsed
 * (server frames, unmasked) and written (client frames, masked, any length). exec.ts and
 * port-forward.ts read the channels above it.
 */
import { createHash, randomBytes } from 'node:crypto';
import type http from 'node:http';
import type https from 'node:https';
import type { Duplex } from 'node:stream';
import { apiErrorOf, type RestConfig } from './rest.js';

// Not ES imports: node:http's ES namespace loads Node's bundled undici (see rest.ts).
const httpModule = process.getBuiltinModule('node:http');
const httpsModule = process.getBuiltinModule('node:https');

const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export const OP_CONTINUATION = 0x0;
export const OP_BINARY = 0x2;
export const OP_CLOSE = 0x8;
export const OP_PING = 0x9;
export const OP_PONG = 0xa;

export interface UpgradeOptions {
  /** Sec-WebSocket-Protocol offers, best first. */
  readonly protocols: readonly string[];
  readonly signal?: AbortSignal;
  readonly userAgent?: string;
  /** What is opened, for messages ("exec into ns/pod"). */
  readonly what: string;
}

export interface UpgradedSocket {
  readonly socket: Duplex;
  /** Bytes the server sent after its 101 answer, before the socket was handed over. */
  readonly head: Buffer;
  /** The protocol the server chose. */
  readonly protocol: string;
}

/**
 * GETs `path?query` asking for a WebSocket; resolves with the upgraded socket. An answer other than
 * the upgrade (403 without RBAC, 404 for no such pod) rejects with its ApiError; aborting rejects
 * with the signal's reason.
 */
export async function openWebSocket(config: RestConfig, path: string, query: URLSearchParams, o: UpgradeOptions): Promise<UpgradedSocket> {
  o.signal?.throwIfAborted();
  const u = new URL(`${config.server}${path}?${query.toString()}`);
  const key = randomBytes(16).toString('base64');
  const ro: https.RequestOptions = {
    method: 'GET', agent: false, protocol: u.protocol, hostname: u.hostname, port: u.port, path: u.pathname + u.search,
    headers: {
      Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': key,
      'Sec-WebSocket-Protocol': o.protocols.join(', '), 'User-Agent': o.userAgent ?? 'retina-ts',
    },
  };
  await config.authorize(ro);
  return new Promise<UpgradedSocket>((resolve, reject) => {
    let settled = false;
    const finish = (e: unknown, up?: UpgradedSocket): void => {
      if (settled) return;
      settled = true;
      o.signal?.removeEventListener('abort', onAbort);
      if (up) resolve(up);
      else reject(e instanceof Error ? e : new Error(String(e)));
    };
    const onAbort = (): void => {
      req.destroy();
      finish(o.signal?.reason ?? new Error('aborted'));
    };
    const req = (u.protocol === 'https:' ? httpsModule : httpModule).request(ro);
    req.on('error', (e) => finish(e));
    req.on('response', (res: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < 65_536) chunks.push(c);
        size += c.length;
      });
      res.on('end', () => finish(apiErrorOf('GET', path, res.statusCode ?? 0, Buffer.concat(chunks))));
      res.on('error', (e) => finish(e));
    });
    req.on('upgrade', (res: http.IncomingMessage, s: Duplex, head: Buffer) => {
      const accept = createHash('sha1').update(key + ACCEPT_GUID).digest('base64');
      if (res.headers['sec-websocket-accept'] !== accept) {
        s.destroy();
        finish(new Error(`${o.what}: the server's WebSocket handshake does not answer ours`));
        return;
      }
      if (settled) {
        s.destroy();
        return;
      }
      finish(undefined, { socket: s, head, protocol: String(res.headers['sec-websocket-protocol'] ?? '') });
    });
    o.signal?.addEventListener('abort', onAbort, { once: true });
    req.end();
  });
}

export interface Frame {
  readonly fin: boolean;
  readonly opcode: number;
  readonly payload: Buffer;
  /** Where the next frame starts in the buffer. */
  readonly end: number;
}

/** The first whole frame in `b`, or undefined while it is incomplete. A masked frame is unmasked. */
export function parseFrame(b: Buffer): Frame | undefined {
  if (b.length < 2) return undefined;
  const b0 = b[0] as number;
  const b1 = b[1] as number;
  let len = b1 & 0x7f;
  let off = 2;
  if (len === 126) {
    if (b.length < 4) return undefined;
    len = b.readUInt16BE(2);
    off = 4;
  } else if (len === 127) {
    if (b.length < 10) return undefined;
    len = Number(b.readBigUInt64BE(2));
    off = 10;
  }
  const masked = (b1 & 0x80) !== 0;
  const mask = masked ? b.subarray(off, off + 4) : undefined;
  if (masked) off += 4;
  if (b.length < off + len) return undefined;
  let payload = b.subarray(off, off + len);
  if (mask) {
    payload = Buffer.from(payload);
    for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (mask[i % 4] as number);
  }
  return { fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload, end: off + len };
}

/**
 * A client frame (masked, as RFC 6455 wants of clients), final, of any length; `prefix` (a channel
 * byte) goes before the payload without a copy of the caller's buffer into another first.
 */
export function clientFrame(opcode: number, payload: Buffer, prefix?: number): Buffer {
  const len = payload.length + (prefix === undefined ? 0 : 1);
  const headLen = len < 126 ? 2 : len < 65_536 ? 4 : 10;
  const out = Buffer.allocUnsafe(headLen + 4 + len);
  out[0] = 0x80 | opcode;
  if (len < 126) {
    out[1] = 0x80 | len;
  } else if (len < 65_536) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 0x80 | 127;
    out.writeBigUInt64BE(BigInt(len), 2);
  }
  const mask = randomBytes(4);
  mask.copy(out, headLen);
  let at = headLen + 4;
  if (prefix !== undefined) out[at++] = prefix;
  payload.copy(out, at);
  for (let i = 0; i < len; i++) out[headLen + 4 + i] = (out[headLen + 4 + i] as number) ^ (mask[i % 4] as number);
  return out;
}

export interface ChannelHandlers {
  /** A data message's bytes (each fragment's), with its channel (the first byte of its first fragment) and whether it ends the message. */
  data(channel: number, payload: Buffer, last: boolean): void;
  /** The server sent its close frame. */
  close(): void;
  /** After each chunk of frames has been handled. */
  afterChunk?(): void;
}

/**
 * Feeds the upgraded socket's frames (and `head`, the bytes that came with the upgrade) to the
 * handlers: the channel protocol of the API server's subresources (v4/v5.channel.k8s.io), whose
 * every message starts with its channel byte. Pings are answered here.
 */
export function readChannelFrames(socket: Duplex, head: Buffer, h: ChannelHandlers): void {
  let buf: Buffer = Buffer.alloc(0);
  /** The channel of the message whose fragments are arriving. */
  let channel = -1;
  const onData = (chunk: Buffer): void => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (let f = parseFrame(buf); f; f = parseFrame(buf)) {
      buf = buf.subarray(f.end);
      if (f.opcode === 0x1 || f.opcode === OP_BINARY) {
        channel = f.payload[0] ?? -1;
        h.data(channel, f.payload.subarray(1), f.fin);
      } else if (f.opcode === OP_CONTINUATION) {
        h.data(channel, f.payload, f.fin);
      } else if (f.opcode === OP_CLOSE) {
        h.close();
      } else if (f.opcode === OP_PING) {
        socket.write(clientFrame(OP_PONG, f.payload.subarray(0, 125)));
      }
    }
    h.afterChunk?.();
  };
  socket.on('data', onData);
  if (head.length) onData(head);
}

/** A close frame (1000, normal closure). */
export const closeFrame = (): Buffer => clientFrame(OP_CLOSE, Buffer.from([0x03, 0xe8]));
