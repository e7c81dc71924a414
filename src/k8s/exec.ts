/**
 * `pods/exec` through the API server, on the same RestConfig (TLS, token, impersonation) as every
 * other request of the REST transport: the WebSocket channel protocol (v5.channel.k8s.io, else
 * v4.channel.k8s.io, as client-node and kubectl ask for them) over one upgraded HTTP request. Each
 * binary message's first byte is its channel: 1 stdout, 2 stderr, 3 the command's Status (its exit
 * code) at the end. Only what exec without stdin needs of RFC 6455 is here (the client side that
 * receives: data frames, fragments, ping, close); nothing is sent but pong and close.
 */
import { createHash, randomBytes } from 'node:crypto';
import type http from 'node:http';
import type https from 'node:https';
import type { Duplex, Writable } from 'node:stream';
import { apiErrorOf, type RestConfig } from './rest.js';

// Not ES imports: node:http's ES namespace loads Node's bundled undici (see rest.ts).
const httpModule = process.getBuiltinModule('node:http');
const httpsModule = process.getBuiltinModule('node:https');

const EXEC_PROTOCOLS: readonly string[] = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
/** How long the server has to answer our close frame before the socket is dropped. */
const CLOSE_WAIT_MS = 5000;

export interface ExecOptions {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
  readonly command: readonly string[];
  /** The command's output; written with back-pressure, never ended here. Its 'error' ends the exec with that error. */
  readonly stdout: Writable;
  readonly stderr: Writable;
  /** Aborting closes the stream; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  readonly userAgent?: string;
}

/** How the command ended, as the API server reports it (a metav1.Status: Success, or Failure with an ExitCode cause). */
export interface ExecStatus {
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly details?: { readonly causes?: readonly { readonly reason?: string; readonly message?: string }[] };
}

/**
 * Runs `command` in the pod's container; resolves once the server closed the stream, with the
 * command's Status (undefined when the stream ended without one: the connection was lost). An answer
 * other than the upgrade (403 without RBAC on pods/exec, 404 for no such pod) rejects with its ApiError.
 */
export async function execInPod(config: RestConfig, o: ExecOptions): Promise<ExecStatus | undefined> {
  o.signal?.throwIfAborted();
  const query = new URLSearchParams();
  for (const c of o.command) query.append('command', c);
  query.set('container', o.container);
  query.set('stdout', 'true');
  query.set('stderr', 'true');
  const path = `/api/v1/namespaces/${encodeURIComponent(o.namespace)}/pods/${encodeURIComponent(o.pod)}/exec`;
  const u = new URL(`${config.server}${path}?${query.toString()}`);
  const key = randomBytes(16).toString('base64');
  const ro: https.RequestOptions = {
    method: 'GET', agent: false, protocol: u.protocol, hostname: u.hostname, port: u.port, path: u.pathname + u.search,
    headers: {
      Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': key,
      'Sec-WebSocket-Protocol': EXEC_PROTOCOLS.join(', '), 'User-Agent': o.userAgent ?? 'retina-ts',
    },
  };
  await config.authorize(ro);
  return new Promise<ExecStatus | undefined>((resolve, reject) => {
    let socket: Duplex | undefined;
    let settled = false;
    const finish = (e: unknown, status?: ExecStatus): void => {
      if (settled) return;
      settled = true;
      o.signal?.removeEventListener('abort', onAbort);
      o.stdout.off('error', onOutputError);
      if (e === undefined) resolve(status);
      else reject(e instanceof Error ? e : new Error(String(e)));
    };
    const onAbort = (): void => {
      req.destroy();
      socket?.destroy();
      finish(o.signal?.reason ?? new Error('aborted'));
    };
    /** stdout failed (a full disk): the stream stops, and the promise rejects with that error. */
    const onOutputError = (e: Error): void => {
      req.destroy();
      socket?.destroy();
      finish(e);
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
      socket = s;
      const accept = createHash('sha1').update(key + ACCEPT_GUID).digest('base64');
      if (res.headers['sec-websocket-accept'] !== accept) {
        s.destroy();
        finish(new Error(`exec into ${o.namespace}/${o.pod}: the server's WebSocket handshake does not answer ours`));
        return;
      }
      readChannels(s, head, o, finish);
    });
    o.signal?.addEventListener('abort', onAbort, { once: true });
    o.stdout.once('error', onOutputError);
    req.end();
  });
}

/** Reads the frames of the upgraded socket into the streams until it closes; `done` gets the Status. */
function readChannels(socket: Duplex, head: Buffer, o: ExecOptions, done: (e: unknown, status?: ExecStatus) => void): void {
  let buf: Buffer = Buffer.alloc(0);
  /** The channel of the message whose fragments are arriving. */
  let channel = -1;
  const status: Buffer[] = [];
  let paused = false;
  let closing: NodeJS.Timeout | undefined;
  const close = (): void => {
    if (closing) return;
    socket.write(frame(0x8, Buffer.from([0x03, 0xe8]))); // 1000: normal closure
    closing = setTimeout(() => socket.destroy(), CLOSE_WAIT_MS);
  };
  const deliver = (data: Buffer, last: boolean): void => {
    if (channel === STDOUT && data.length > 0) {
      if (!o.stdout.write(data) && !paused) {
        paused = true;
        socket.pause();
        o.stdout.once('drain', () => {
          paused = false;
          socket.resume();
        });
      }
    } else if (channel === STDERR && data.length > 0) {
      o.stderr.write(data);
    } else if (channel === STATUS) {
      status.push(data);
      // the Status ends the command: close our side (as client-node does)
      if (last && status.some((x) => x.length > 0)) close();
    }
  };
  const onData = (chunk: Buffer): void => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (let f = parseFrame(buf); f; f = parseFrame(buf)) {
      buf = buf.subarray(f.end);
      if (f.opcode === 0x1 || f.opcode === 0x2) {
        channel = f.payload[0] ?? -1;
        deliver(f.payload.subarray(1), f.fin);
      } else if (f.opcode === 0x0) {
        deliver(f.payload, f.fin);
      } else if (f.opcode === 0x8) {
        close();
        socket.end();
      } else if (f.opcode === 0x9) {
        socket.write(frame(0xa, f.payload));
      }
    }
  };
  socket.on('data', onData);
  socket.on('error', (e) => done(e));
  socket.on('close', () => {
    clearTimeout(closing);
    const text = Buffer.concat(status).toString('utf8');
    if (!text) return done(undefined, undefined);
    try {
      done(undefined, JSON.parse(text) as ExecStatus);
    } catch {
      done(undefined, { status: 'Failure', message: text });
    }
  });
  if (head.length) onData(head);
}

interface Frame {
  readonly fin: boolean;
  readonly opcode: number;
  readonly payload: Buffer;
  /** Where the next frame starts in the buffer. */
  readonly end: number;
}

/** The first whole frame in `b`, or undefined while it is incomplete. A masked (server) frame is unmasked. */
function parseFrame(b: Buffer): Frame | undefined {
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

/** A client frame (masked, as RFC 6455 wants of clients): control frames only, payload under 126 bytes. */
function frame(opcode: number, payload: Buffer): Buffer {
  const p = payload.subarray(0, 125);
  const out = Buffer.alloc(6 + p.length);
  out[0] = 0x80 | opcode;
  out[1] = 0x80 | p.length;
  const mask = randomBytes(4);
  mask.copy(out, 2);
  for (let i = 0; i < p.length; i++) out[6 + i] = (p[i] as number) ^ (mask[i % 4] as number);
  return out;
}
