/**
 * `pods/portforward` through the API server (what `kubectl port-forward` does), on the same
 * RestConfig as every request: one WebSocket per connection (`v4.channel.k8s.io`, the kubelet's and
 * the container runtime's WebSocket port-forward, which the API server passes through), channel 0
 * the data and channel 1 the errors of the one port asked for; the server opens each channel with the
 * port number (2 bytes, little endian). `forwardLocally` serves it on a loopback port, so that any
 * client (grpc-js) connects as to the pod.
 */
import { createServer, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import type { RestConfig } from './rest.js';
import { closeFrame, clientFrame, OP_BINARY, openWebSocket, readChannelFrames } from './websocket.js';

const PROTOCOLS: readonly string[] = ['v4.channel.k8s.io'];
const DATA = 0;
const ERROR = 1;

export interface PortForwardTarget {
  readonly namespace: string;
  readonly pod: string;
  readonly port: number;
  readonly signal?: AbortSignal;
  readonly userAgent?: string;
}

/** One connection to the pod's port: a Duplex of its bytes. An error the server reports on channel 1 destroys it with that text. */
export async function openPortForward(config: RestConfig, t: PortForwardTarget): Promise<Duplex> {
  const what = `port-forward to ${t.namespace}/${t.pod}:${t.port}`;
  const path = `/api/v1/namespaces/${encodeURIComponent(t.namespace)}/pods/${encodeURIComponent(t.pod)}/portforward`;
  const { socket, head } = await openWebSocket(config, path, new URLSearchParams({ ports: String(t.port) }), { protocols: PROTOCOLS, signal: t.signal, userAgent: t.userAgent, what });
  /** Each channel's first two bytes are the port, not data. */
  const portBytesLeft = [2, 2];
  let errorText = '';
  let closed = false;
  const stream = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      socket.write(clientFrame(OP_BINARY, chunk, DATA), cb);
    },
    final(cb) {
      if (!socket.destroyed) socket.write(closeFrame());
      cb();
    },
    destroy(err, cb) {
      socket.destroy();
      cb(err);
    },
  });
  const end = (): void => {
    if (closed) return;
    closed = true;
    if (errorText) stream.destroy(new Error(`${what}: ${errorText.trim()}`));
    else stream.push(null);
  };
  socket.on('error', (e) => stream.destroy(e));
  socket.on('close', end);
  readChannelFrames(socket, head, {
    data(channel, data) {
      if (channel !== DATA && channel !== ERROR) return;
      const skip = Math.min(portBytesLeft[channel] as number, data.length);
      portBytesLeft[channel] = (portBytesLeft[channel] as number) - skip;
      const rest = data.subarray(skip);
      if (rest.length === 0) return;
      if (channel === ERROR) errorText += rest.toString('utf8');
      else if (!stream.push(rest)) socket.pause();
    },
    close() {
      if (!socket.destroyed) socket.end(closeFrame());
      end();
    },
    afterChunk() {
      // an error on channel 1 ends the connection (the runtime could not connect to the port)
      if (errorText) {
        socket.destroy();
        end();
      }
    },
  });
  return stream;
}

export interface LocalForward extends AsyncDisposable {
  /** The loopback port that reaches the pod's port. */
  readonly port: number;
  /** Connections that failed (the first error of each), for messages. */
  readonly errors: readonly string[];
}

/** A loopback listener whose every connection is a port-forward to the target; disposing closes it and every connection. */
export async function forwardLocally(config: RestConfig, t: PortForwardTarget): Promise<LocalForward> {
  const open = new Set<Socket | Duplex>();
  const errors: string[] = [];
  const server = createServer((conn) => {
    open.add(conn);
    conn.on('close', () => open.delete(conn));
    conn.on('error', () => conn.destroy());
    conn.pause();
    openPortForward(config, t).then((remote) => {
      open.add(remote);
      remote.on('error', (e: Error) => {
        errors.push(e.message);
        conn.destroy();
      });
      remote.on('close', () => {
        open.delete(remote);
        conn.destroy();
      });
      conn.on('close', () => remote.destroy());
      conn.pipe(remote);
      remote.pipe(conn);
      conn.resume();
    }, (e: unknown) => {
      errors.push((e as Error).message);
      conn.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    errors,
    async [Symbol.asyncDispose]() {
      for (const c of open) c.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
