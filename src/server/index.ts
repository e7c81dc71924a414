/**
 * The agent's HTTP server: GET /metrics (Prometheus text), /healthz (liveness: 200 while the process
 * answers and `health` reports nothing fatal, else 503 with the reason), /readyz (200 when every
 * enabled plugin runs, 503 otherwise; JSON lists each plugin's state, last error and degraded sources).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log/index.js';

// node:http through getBuiltinModule, not an ES import: building the ES namespace of node:http reads
// every export, and its WebSocket getters load Node's bundled undici (about 6 MB anonymous and 4 MB
// file-backed RSS that the agent never uses). eslint's no-restricted-imports keeps it that way.
const { createServer } = process.getBuiltinModule('node:http');

export interface ReadinessSource<S> {
  ready(): boolean;
  status(): S[];
}

export interface HttpServerOptions<S> {
  readonly host: string;
  readonly port: number;
  readonly log: Logger;
  readonly expose: () => Promise<{ contentType: string; body: string }>;
  readonly readiness: ReadinessSource<S>;
  /**
   * Why the process is not live (it is exiting after a fatal error, say), or undefined when it is.
   * A blocked event loop needs no check here: the probe then times out.
   */
  readonly health?: () => string | undefined;
}

export interface HttpServer extends AsyncDisposable {
  readonly address: AddressInfo;
}

export async function startHttpServer<S>(opts: HttpServerOptions<S>): Promise<HttpServer> {
  const started = Date.now();
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      opts.log.error('request failed', { path: req.url, error: e instanceof Error ? e.message : String(e) });
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 60_000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      return;
    }
    switch (path) {
      case '/metrics': {
        const { contentType, body } = await opts.expose();
        send(res, 200, contentType, body, req.method === 'HEAD');
        return;
      }
      case '/healthz': {
        const problem = opts.health?.();
        const body = { status: problem === undefined ? 'ok' : 'failing', ...(problem !== undefined ? { reason: problem } : {}), uptimeSeconds: Math.round((Date.now() - started) / 1000) };
        send(res, problem === undefined ? 200 : 503, 'application/json', JSON.stringify(body) + '\n', req.method === 'HEAD');
        return;
      }
      case '/readyz': {
        const ready = opts.readiness.ready();
        const body = { status: ready ? 'ready' : 'not ready', plugins: opts.readiness.status() };
        send(res, ready ? 200 : 503, 'application/json', JSON.stringify(body) + '\n');
        return;
      }
      default:
        send(res, 404, 'text/plain; charset=utf-8', 'not found: try /metrics, /healthz or /readyz\n');
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  opts.log.info('http server listening', { host: address.address, port: address.port });
  return {
    address,
    async [Symbol.asyncDispose]() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function send(res: ServerResponse, status: number, contentType: string, body: string, headOnly = false): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(headOnly ? undefined : body);
}
