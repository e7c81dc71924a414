/**
 * `pods/exec` through the API server, on the same RestConfig (TLS, token, impersonation) as every
 * other request of the REST transport: the WebSocket channel protocol (v5.channel.k8s.io, else
 * v4.channel.k8s.io, as client-node and kubectl ask for them) over one upgraded HTTP request. Each
 * binary message's first byte is its channel: 1 stdout, 2 stderr, 3 the command's Status (its exit
 * code) at the end. Only what exec without stdin needs of RFC 6455 is here (the client side that
 * receives: data frames, fragments, ping, close); nothing is sent but pong and close.
 */
import type { Duplex, Writable } from 'node:stream';
import type { RestConfig } from './rest.js';
import { closeFrame, openWebSocket, readChannelFrames } from './websocket.js';

const EXEC_PROTOCOLS: readonly string[] = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
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
  const { socket, head } = await openWebSocket(config, path, query, {
    protocols: EXEC_PROTOCOLS, signal: o.signal, userAgent: o.userAgent, what: `exec into ${o.namespace}/${o.pod}`,
  });
  return new Promise<ExecStatus | undefined>((resolve, reject) => {
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
  });
}

/** Reads the frames of the upgraded socket into the streams until it closes; `done` gets the Status. */
function readChannels(socket: Duplex, head: Buffer, o: ExecOptions, done: (e: unknown, status?: ExecStatus) => void): void {
  const status: Buffer[] = [];
  let paused = false;
  let closing: NodeJS.Timeout | undefined;
  const close = (): void => {
    if (closing) return;
    socket.write(closeFrame()); // 1000: normal closure
    closing = setTimeout(() => socket.destroy(), CLOSE_WAIT_MS);
  };
  socket.on('error', (e) => done(e));
  readChannelFrames(socket, head, {
    data(channel, data, last) {
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
    },
    close() {
      close();
      socket.end();
    },
  });
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
}
