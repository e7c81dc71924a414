/**
 * The agent's HTTP server: GET /metrics (Prometheus text), /healthz (liveness: 200 while the process
 * answers and `health` reports nothing fatal, else 503 with the reason), /readyz (200 when every
 * enabled plugin runs, 503 otherwise; JSON lists each plugin's state, last error and degraded sources).
 *
 * Always hardened: GET and HEAD only (405), request headers capped (431), slow clients cut off
 * (headers, whole request, idle keep-alive, TLS handshake), and no answer repeats what the client
 * sent. Optionally HTTPS (tls.ts: files reloaded when they change) and, for /metrics, Kubernetes
 * authentication and authorization (auth.ts: 401 without a valid token, 403 without RBAC). The
 * probes stay open for the kubelet, and then tell only ok/ready or not (no reasons, no plugin list)
 * unless the request carries a token allowed on /metrics.
 */
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from '../log/index.js';
import type { KubeAuthorizerOptions, RequestAuthorizer } from './auth.js';
import type { TlsFiles } from './tls.js';

// Types only: auth.ts and tls.ts load node:crypto and node:tls (several MB of RSS), so they are
// imported when metricsAuth or metricsTLS is on (`import('./server/auth.js')`), never by default.
export type { AuthDecision, KubeAuthorizerOptions, RequestAuthorizer } from './auth.js';
export type { TlsFiles, TlsPair } from './tls.js';

/** The Kubernetes authorizer of /metrics (auth.ts), loaded on demand: only when metricsAuth is on. */
export async function loadKubeAuthorizer(o: KubeAuthorizerOptions): Promise<RequestAuthorizer> {
  return (await import('./auth.js')).createKubeAuthorizer(o);
}

export interface ReadinessSource<S> {
  ready(): boolean;
  status(): S[];
}

/** Limits against slow or greedy clients (defaults in DEFAULT_LIMITS). */
export interface ServerLimits {
  /** Largest request head (request line and headers) in bytes; larger ones get 431. */
  readonly maxHeaderBytes: number;
  /** The whole head must arrive within this (408 otherwise). */
  readonly headersTimeoutMs: number;
  /** The whole request must arrive within this. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** The TLS handshake must finish within this. */
  readonly handshakeTimeoutMs: number;
  /** How often Node checks the header and request timeouts. */
  readonly checkIntervalMs: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  maxHeaderBytes: 8192,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // Above Prometheus' scrape interval keeps its connection; idle ones still go within a minute.
  keepAliveTimeoutMs: 65_000,
  handshakeTimeoutMs: 10_000,
  // Node's check timer runs even with no connection: every 5 s keeps an idle agent's wake-ups low
  // (test/ebpf/idle.test.ts), and a slow head is cut within 10-15 s.
  checkIntervalMs: 5_000,
};

export interface HttpServerOptions<S> {
  readonly host: string;
  readonly port: number;
  readonly log: Logger;
  /**
   * The /metrics body. `release`, when given, is called once the response has been written (the
   * body's bytes may then be reused); not after a response that failed.
   */
  readonly expose: () => Promise<{ contentType: string; body: string | Uint8Array; release?: () => void }>;
  readonly readiness: ReadinessSource<S>;
  /**
   * Why the process is not live (it is exiting after a fatal error, say), or undefined when it is.
   * A blocked event loop needs no check here: the probe then times out.
   */
  readonly health?: () => string | undefined;
  /** HTTPS with this certificate and key (reloaded on change); plain HTTP without. */
  readonly tls?: TlsFiles & { readonly pollMs?: number };
  /** Checks each /metrics request's bearer token; everyone may scrape without. */
  readonly auth?: RequestAuthorizer;
  readonly limits?: Partial<ServerLimits>;
}

export interface HttpServer extends AsyncDisposable {
  readonly address: AddressInfo;
  readonly scheme: 'http' | 'https';
  /**
   * Resolves once no connection waits for an answer (one accepted and not answered yet, or a request
   * being handled), or after `maxMs`: start-up work that holds the event loop for tens of ms (the
   * plugins' attach) waits for it, so a scrape or probe that came meanwhile is answered first.
   */
  quiet(maxMs: number): Promise<void>;
}

const TEXT = 'text/plain; charset=utf-8';

export async function startHttpServer<S>(opts: HttpServerOptions<S>): Promise<HttpServer> {
  const started = Date.now();
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  // Connections waiting for an answer (quiet()): a new one until its first response or its close,
  // a kept-alive one from each request to its response.
  const waiting = new Set<Socket>();
  const onQuiet: (() => void)[] = [];
  const answered = (s: Socket): void => {
    if (!waiting.delete(s) || waiting.size) return;
    for (const f of onQuiet.splice(0)) f();
  };
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    waiting.add(req.socket);
    res.once('close', () => answered(req.socket));
    handle(req, res).catch((e: unknown) => {
      opts.log.error('request failed', { path: (req.url ?? '').slice(0, 200), error: e instanceof Error ? e.message : String(e) });
      if (!res.headersSent) send(res, 500, TEXT, 'internal error\n');
      else res.destroy();
    });
  };
  const common: ServerOptions = {
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: limits.checkIntervalMs,
  };
  let server: Server;
  let reloader: Disposable | undefined;
  if (opts.tls) {
    const { loadTlsPair, startTlsReloader } = await import('./tls.js');
    const pair = await loadTlsPair(opts.tls);
    const { createServer: createHttpsServer } = process.getBuiltinModule('node:https');
    const https = createHttpsServer({ ...common, cert: pair.cert, key: pair.key, handshakeTimeout: limits.handshakeTimeoutMs, minVersion: 'TLSv1.2' }, listener);
    reloader = startTlsReloader({
      files: opts.tls, current: pair, log: opts.log, ...(opts.tls.pollMs !== undefined ? { pollMs: opts.tls.pollMs } : {}),
      apply: (p) => https.setSecureContext({ cert: p.cert, key: p.key, minVersion: 'TLSv1.2' }),
    });
    opts.log.info('metrics TLS certificate loaded', { certFile: opts.tls.certFile, subject: pair.subject, notAfter: pair.notAfter });
    server = https;
  } else {
    // node:http through getBuiltinModule, not an ES import: building the ES namespace of node:http reads
    // every export, and its WebSocket getters load Node's bundled undici (about 6 MB anonymous and 4 MB
    // file-backed RSS that the agent never uses). eslint's no-restricted-imports keeps it that way.
    // Taken here, not when this module loads: the agent's start-up snapshot (src/cli/agent-snapshot.ts)
    // holds this module, and node:http cannot be in a snapshot.
    server = process.getBuiltinModule('node:http').createServer(common, listener);
  }
  server.on(opts.tls ? 'secureConnection' : 'connection', (s: Socket) => {
    waiting.add(s);
    s.once('close', () => answered(s));
  });
  // A connection that never sends a request (or stalls mid-body) is closed too.
  server.setTimeout(limits.requestTimeoutMs, (socket) => socket.destroy());

  /** Whether this request may see /metrics (and the probes' details). */
  async function allowed(req: IncomingMessage, res: ServerResponse, path: string, answer: boolean): Promise<boolean> {
    if (!opts.auth) return true;
    const d = await opts.auth.authorize(req.headers.authorization, path);
    if (d.outcome === 'allowed') return true;
    if (!answer) return false;
    switch (d.outcome) {
      case 'unauthenticated':
        opts.log.debug('metrics request refused: not authenticated', { reason: d.reason });
        res.setHeader('WWW-Authenticate', 'Bearer realm="retina-ts metrics"');
        send(res, 401, TEXT, 'unauthorized\n');
        break;
      case 'forbidden':
        opts.log.debug('metrics request refused: not allowed', { user: d.user, reason: d.reason });
        send(res, 403, TEXT, 'forbidden\n');
        break;
      case 'unavailable':
        send(res, 503, TEXT, 'authorization unavailable\n');
        break;
      case 'throttled':
        res.setHeader('Retry-After', '1');
        send(res, 429, TEXT, 'too many token reviews in flight\n');
        break;
    }
    return false;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      res.setHeader('Allow', 'GET, HEAD');
      send(res, 405, TEXT, 'method not allowed\n');
      return;
    }
    switch (path) {
      case '/metrics': {
        if (!(await allowed(req, res, '/metrics', true))) return;
        const { contentType, body, release } = await opts.expose();
        if (release) {
          if (head) release();
          else res.once('finish', release);
        }
        send(res, 200, contentType, body, head);
        return;
      }
      case '/healthz': {
        const problem = opts.health?.();
        const detail = req.headers.authorization !== undefined && (await allowed(req, res, '/metrics', false));
        const body = opts.auth && !detail
          ? { status: problem === undefined ? 'ok' : 'failing' }
          : { status: problem === undefined ? 'ok' : 'failing', ...(problem !== undefined ? { reason: problem } : {}), uptimeSeconds: Math.round((Date.now() - started) / 1000) };
        send(res, problem === undefined ? 200 : 503, 'application/json', JSON.stringify(body) + '\n', head);
        return;
      }
      case '/readyz': {
        const ready = opts.readiness.ready();
        const detail = req.headers.authorization !== undefined && (await allowed(req, res, '/metrics', false));
        const body = opts.auth && !detail ? { status: ready ? 'ready' : 'not ready' } : { status: ready ? 'ready' : 'not ready', plugins: opts.readiness.status() };
        send(res, ready ? 200 : 503, 'application/json', JSON.stringify(body) + '\n', head);
        return;
      }
      default:
        send(res, 404, TEXT, 'not found: try /metrics, /healthz or /readyz\n', head);
    }
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port, opts.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    reloader?.[Symbol.dispose]();
    throw e;
  }
  const address = server.address() as AddressInfo;
  const scheme = opts.tls ? 'https' : 'http';
  opts.log.info('http server listening', { host: address.address, port: address.port, scheme, auth: opts.auth ? 'kubernetes' : 'none' });
  return {
    address,
    scheme,
    quiet: (maxMs) => new Promise<void>((resolve) => {
      if (!waiting.size) return resolve();
      const timer = setTimeout(done, maxMs);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        const i = onQuiet.indexOf(done);
        if (i >= 0) onQuiet.splice(i, 1);
        resolve();
      }
      onQuiet.push(done);
    }),
    async [Symbol.asyncDispose]() {
      reloader?.[Symbol.dispose]();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function send(res: ServerResponse, status: number, contentType: string, body: string | Uint8Array, headOnly = false): void {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': length, 'X-Content-Type-Options': 'nosniff' });
  res.end(headOnly ? undefined : body);
}
