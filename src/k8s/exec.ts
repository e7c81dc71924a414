/**
 * `pods/exec` through the API server, on the same RestConfig (TLS, token, impersonation) as every
 * other request of the REST transport: the WebSocket channel protocol (v5.channel.k8s.io, else
 * v4.channel.k8s.io, as client-node and kubectl ask for them) over one upgraded HTTP request. Each
 * binary message's first byte is its channel: 1 stdout, 2 stderr, 3 the command's Status (its exit
 * code) at the end. `attachToPod` (pods/attach) and an exec with `stdin` send too: channel 0 carries
 * stdin, 4 the terminal's size ({"Width","Height"}), and on v5 a message [255, 0] closes stdin (its end; a
 * terminal gets Ctrl-D instead).
 * The upgrade and the frames (RFC 6455's client side) are websocket.ts's, shared with port-forward.ts.
 */
import type { Duplex, Readable, Writable } from 'node:stream';
import type { RestConfig } from './rest.js';
import { clientFrame, closeFrame, OP_BINARY, openWebSocket, readChannelFrames } from './websocket.js';

const EXEC_PROTOCOLS: readonly string[] = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
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
  const { socket, head, protocol } = await openWebSocket(config, path, query, {
    protocols: EXEC_PROTOCOLS, signal: o.signal, userAgent: o.userAgent, what: `${sub} into ${o.namespace}/${o.pod}`,
  });
  return new Promise<ExecStatus | undefined>((resolve, reject) => {
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
      socket.destroy();
      finish(o.signal?.reason ?? new Error('aborted'));
    };
    /** stdout failed (a full disk): the stream stops, and the promise rejects with that error. */
    const onOutputError = (e: Error): void => {
      socket.destroy();
      finish(e);
    };
    if (o.signal?.aborted) return onAbort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    o.stdout.once('error', onOutputError);
    readChannels(socket, head, o, finish);
    cleanups.push(...sendInput(socket, o, protocol === 'v5.channel.k8s.io'));
  });
}

/** Sends stdin (channel 0) and the terminal's size (channel 4) on the socket; returns what stops that. */
function sendInput(socket: Duplex, o: StreamOptions, v5: boolean): (() => void)[] {
  const stops: (() => void)[] = [];
  const send = (ch: number, data: Buffer): void => {
    if (!socket.destroyed && socket.writable) socket.write(clientFrame(OP_BINARY, data, ch));
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
  const status: Buffer[] = [];
  let paused = false;
  // stdout's writes not yet through the stream (a slow writer buffers them): the command's output is
  // all there only when none is left, so the end waits for the last one's callback.
  let pending = 0;
  let flushed: (() => void) | undefined;
  const wrote = (): void => {
    if (--pending === 0) flushed?.();
  };
  let closing: NodeJS.Timeout | undefined;
  const close = (): void => {
    if (closing) return;
    socket.write(closeFrame()); // 1000: normal closure
    closing = setTimeout(() => socket.destroy(), CLOSE_WAIT_MS);
  };
  // EPIPE: a write (stdin, its end, our close) met a peer that had closed, as when the shell exits on a
  // command sent just before stdin's end: what was read decides the outcome, on 'close' below.
  socket.on('error', (e) => {
    if ((e as NodeJS.ErrnoException).code !== 'EPIPE') done(e);
  });
  readChannelFrames(socket, head, {
    data(channel, data, last) {
      if (channel === STDOUT && data.length > 0) {
        pending++;
        if (!o.stdout.write(data, wrote) && !paused) {
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
    },
    close() {
      close();
      socket.end();
    },
  });
  socket.on('close', () => {
    clearTimeout(closing);
    const text = Buffer.concat(status).toString('utf8');
    let result: ExecStatus | undefined;
    if (text) {
      try {
        result = JSON.parse(text) as ExecStatus;
      } catch {
        result = { status: 'Failure', message: text };
      }
    }
    if (pending === 0) done(undefined, result);
    else flushed = () => done(undefined, result);
  });
}
