/**
 * `pods/exec` through the API server, on the same RestConfig (TLS, token, impersonation) as every
 * other request of the REST transport: the WebSocket channel protocol (v5.channel.k8s.io, else
 * v4.channel.k8s.io, as client-node and kubectl ask for them) over one upgraded HTTP request. Each
 * binary message's first byte is its channel: 1 stdout, 2 stderr, 3 the command's Status (its exit
 * code) at the end. `attachToPod` (pods/attach) and an exec with `stdin` send too: channel 0 carries
 * stdin, 4 the terminal's size ({"Width","Height"}), and on v5 a message [255, 0] closes stdin (its end; a
 * terminal gets Ctrl-D instead).
 * Of RFC 6455 the client side is here: data frames, fragments, ping, close; masked frames out.
 */
import { createHash, randomBytes } from 'node:crypto';
import type http from 'node:http';
import type https from 'node:https';
import type { Duplex, Readable, Writable } from 'node:stream';
import { apiErrorOf, type RestConfig } from './rest.js';

// Not ES imports: node:http's ES namespace loads Node's bundled undici (see rest.ts).
const httpModule = process.getBuiltinModule('node:http');
const httpsModule = process.getBuiltinModule('node:https');

const EXEC_PROTOCOLS: readonly string[] = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const STDIN = 0;
const RESIZE = 4;
/** v5.channel.k8s.io: a message on this channel closes the stream named by its one byte. */
const CLOSE = 255;
/** How long the server has to answer our close frame before the socket is dropped. */
const CLOSE_WAIT_MS = 5000;

/** The size of the local terminal, for a TTY session: its current size and its changes. */
export interface TerminalSize {
  current(): { readonly width: number; readonly height: number } | undefined;
  /** Calls `changed` on every resize; returns the unsubscribe. */
  subscribe(changed: () => void): () => void;
}

export interface StreamOptions {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
  /** The command's output; written with back-pressure, never ended here. Its 'error' ends the exec with that error. */
  readonly stdout: Writable;
  /** Not asked for with `tty` (a terminal has one output). */
  readonly stderr: Writable;
  /** Sent to the process's stdin once the stream is up; its end closes stdin (v5; on v4 stdin stays open), or with `tty` is sent as Ctrl-D. */
  readonly stdin?: Readable;
  /** A terminal session: stdout carries the terminal's output, `terminal` its size. */
  readonly tty?: boolean;
  readonly terminal?: TerminalSize;
  /** Aborting closes the stream; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  readonly userAgent?: string;
}

export interface ExecOptions extends StreamOptions {
  readonly command: readonly string[];
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
  const query = new URLSearchParams();
  for (const c of o.command) query.append('command', c);
  return openStream(config, 'exec', query, o);
}

/**
 * Attaches to the running container's process (pods/attach: its stdin, and its terminal with `tty`), as
 * `kubectl attach -i [-t]`; resolves when the process ends or the server closes the stream. Errors as execInPod's.
 */
export async function attachToPod(config: RestConfig, o: StreamOptions): Promise<ExecStatus | undefined> {
  return openStream(config, 'attach', new URLSearchParams(), o);
}

async function openStream(config: RestConfig, sub: 'exec' | 'attach', query: URLSearchParams, o: StreamOptions): Promise<ExecStatus | undefined> {
  o.signal?.throwIfAborted();
  query.set('container', o.container);
  query.set('stdout', 'true');
  // a terminal merges stderr into stdout (the API server refuses both with tty)
  query.set('stderr', o.tty ? 'false' : 'true');
  if (o.stdin) query.set('stdin', 'true');
  if (o.tty) query.set('tty', 'true');
  const path = `/api/v1/namespaces/${encodeURIComponent(o.namespace)}/pods/${encodeURIComponent(o.pod)}/${sub}`;
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
    const cleanups: (() => void)[] = [];
    const finish = (e: unknown, status?: ExecStatus): void => {
      if (settled) return;
      settled = true;
      o.signal?.removeEventListener('abort', onAbort);
      o.stdout.off('error', onOutputError);
      for (const c of cleanups) c();
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
        finish(new Error(`${sub} into ${o.namespace}/${o.pod}: the server's WebSocket handshake does not answer ours`));
        return;
      }
      readChannels(s, head, o, finish);
      cleanups.push(...sendInput(s, o, res.headers['sec-websocket-protocol'] === 'v5.channel.k8s.io'));
    });
    o.signal?.addEventListener('abort', onAbort, { once: true });
    o.stdout.once('error', onOutputError);
    req.end();
  });
}

/** Sends stdin (channel 0) and the terminal's size (channel 4) on the socket; returns what stops that. */
function sendInput(socket: Duplex, o: StreamOptions, v5: boolean): (() => void)[] {
  const stops: (() => void)[] = [];
  const send = (ch: number, data: Buffer): void => {
    if (!socket.destroyed && socket.writable) socket.write(frame(0x2, Buffer.concat([Buffer.from([ch]), data])));
  };
  if (o.tty && o.terminal) {
    const size = (): void => {
      const s = o.terminal?.current();
      if (s) send(RESIZE, Buffer.from(JSON.stringify({ Width: s.width, Height: s.height })));
    };
    size();
    stops.push(o.terminal.subscribe(size));
  }
  const input = o.stdin;
  if (input) {
    const onData = (c: Buffer | string): void => send(STDIN, Buffer.isBuffer(c) ? c : Buffer.from(c));
    // With a terminal, stdin's end is the terminal's EOF character (Ctrl-D): the shell reads it after what came
    // before and exits, where closing stdin hangs the terminal up and kills the shell mid-command.
    const onEnd = (): void => {
      if (o.tty) send(STDIN, Buffer.from([0x04]));
      else if (v5) send(CLOSE, Buffer.from([STDIN]));
    };
    input.on('data', onData);
    input.once('end', onEnd);
    stops.push(() => {
      input.off('data', onData);
      input.off('end', onEnd);
    });
  }
  return stops;
}

/** Reads the frames of the upgraded socket into the streams until it closes; `done` gets the Status. */
function readChannels(socket: Duplex, head: Buffer, o: StreamOptions, done: (e: unknown, status?: ExecStatus) => void): void {
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

/** A client frame (masked, as RFC 6455 wants of clients), FIN set, of any length. */
function frame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const ext = len < 126 ? 0 : len < 65_536 ? 2 : 8;
  const out = Buffer.alloc(2 + ext + 4 + len);
  out[0] = 0x80 | opcode;
  out[1] = 0x80 | (ext === 0 ? len : ext === 2 ? 126 : 127);
  if (ext === 2) out.writeUInt16BE(len, 2);
  else if (ext === 8) out.writeBigUInt64BE(BigInt(len), 2);
  const mask = randomBytes(4);
  mask.copy(out, 2 + ext);
  const at = 6 + ext;
  for (let i = 0; i < len; i++) out[at + i] = (payload[i] as number) ^ (mask[i % 4] as number);
  return out;
}
