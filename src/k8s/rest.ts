/**
 * A small REST transport for the Kubernetes API over node:https (keep-alive): JSON requests, and
 * watch streams read line by line. Credentials come from a RestConfig (kubeconfig.ts), which can be
 * backed by @kubernetes/client-node's KubeConfig (exec plugins, OIDC...) when that is needed.
 * Every byte received is counted, so benchmarks can compare what an agent pulls from the API server.
 * Requests (not watch streams, which kube-apiserver never compresses) accept gzip: the API server
 * compresses answers over 128 KiB, so a LIST page of 500 RetinaEndpoints crosses the wire about 17
 * times smaller (bench/k8s/README.md, agents at scale); the body cap applies to the decompressed size.
 * `pods/exec` (a WebSocket) goes over the same RestConfig: exec.ts.
 */
import type http from 'node:http';
import type https from 'node:https';
import type zlib from 'node:zlib';
import { splitLines } from './lines.js';
import { ResponseTooLargeError } from './rest-errors.js';

export { ResponseTooLargeError } from './rest-errors.js';

// Not ES imports: node:http's ES namespace loads Node's bundled undici (see src/server/index.ts).
const httpModule = process.getBuiltinModule('node:http');
const httpsModule = process.getBuiltinModule('node:https');
// Loaded at the first compressed answer, not at import (the agent without Kubernetes never needs it).
let zlibModule: typeof zlib | undefined;

/** Default cap on one response body (a LIST page, a GET): memory never grows past it per request. */
export const MAX_BODY_BYTES = 32 << 20;
/** Default cap on one watch line (one event; etcd keeps objects to ~1.5 MiB, JSON is larger). */
export const MAX_LINE_BYTES = 8 << 20;

export interface RestConfig {
  /** https://host:port, without a trailing slash. */
  readonly server: string;
  /** TLS material (ca/cert/key) and any Authorization header for one request; may refresh tokens. */
  authorize(opts: https.RequestOptions): Promise<void>;
  /** Human-readable origin, for logs: "kubeconfig /path (context x)", "in-cluster". */
  readonly source: string;
}

/** An error answer from the API server, with its HTTP code and Status reason. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: unknown,
    /** The Status object's own message (what the server said, without the request); the body's start when it is no Status. */
    readonly statusMessage: string = message,
  ) {
    super(message);
  }
}

/** The ApiError of a non-2xx answer: the Status object's reason, message and details when the body is one. */
export function apiErrorOf(method: string, path: string, status: number, body: Buffer): ApiError {
  let reason = '';
  let message = body.toString('utf8').slice(0, 500);
  let details: unknown;
  try {
    const s = JSON.parse(body.toString('utf8')) as { reason?: string; message?: string; details?: unknown };
    reason = s.reason ?? '';
    message = s.message ?? message;
    details = s.details;
  } catch {
    // not a Status object
  }
  return new ApiError(status, reason, `${method} ${path}: ${status} ${reason}: ${message}`, details, message);
}

export function isApiError(e: unknown, code?: number): e is ApiError {
  return e instanceof ApiError && (code === undefined || e.code === code);
}

export interface RequestOptions {
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: unknown;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  /** Cap on the response body (default MAX_BODY_BYTES); past it the request fails with ResponseTooLargeError. */
  readonly maxBodyBytes?: number;
  /** Cap on one line of a stream (default MAX_LINE_BYTES); past it the stream fails with ResponseTooLargeError. */
  readonly maxLineBytes?: number;
}

export interface WatchStream extends Disposable {
  /** One decoded JSON object per line, until the server ends the stream or it is disposed. */
  readonly lines: AsyncIterable<unknown>;
}

export interface RestClient {
  request<T = unknown>(method: string, path: string, opts?: RequestOptions): Promise<T>;
  /** Opens a streaming GET (a watch); rejects with ApiError when the answer is not 200. */
  stream(path: string, opts?: RequestOptions): Promise<WatchStream>;
  /** Bytes of response bodies received so far (lists, gets, watch streams), as they crossed the wire (compressed). */
  bytesReceived(): number;
  readonly config: RestConfig;
  close(): void;
}

export function createRestClient(config: RestConfig, opts: { maxSockets?: number; userAgent?: string } = {}): RestClient {
  const isHttps = config.server.startsWith('https:');
  const agent = isHttps
    ? new httpsModule.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 64 })
    : new httpModule.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 64 });
  let received = 0;
  const userAgent = opts.userAgent ?? 'retina-ts';

  function url(path: string, query?: RequestOptions['query']): URL {
    const u = new URL(config.server + path);
    if (query) for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') u.searchParams.set(k, String(v));
    return u;
  }

  async function open(method: string, path: string, o: RequestOptions, gzip = false): Promise<http.IncomingMessage> {
    const u = url(path, o.query);
    const ro: https.RequestOptions = {
      method, agent, protocol: u.protocol, hostname: u.hostname, port: u.port, path: u.pathname + u.search,
      headers: { Accept: 'application/json', 'User-Agent': userAgent, ...(gzip ? { 'Accept-Encoding': 'gzip' } : {}) },
    };
    await config.authorize(ro);
    let payload: Buffer | undefined;
    if (o.body !== undefined) {
      payload = Buffer.from(typeof o.body === 'string' ? o.body : JSON.stringify(o.body));
      (ro.headers as Record<string, string | number>)['Content-Type'] = o.contentType ?? 'application/json';
      (ro.headers as Record<string, string | number>)['Content-Length'] = payload.length;
    }
    return new Promise((resolve, reject) => {
      const req = (isHttps ? httpsModule : httpModule).request(ro, resolve);
      req.on('error', reject);
      if (o.timeoutMs) req.setTimeout(o.timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer in ${o.timeoutMs} ms`)));
      const signal = o.signal;
      if (signal) {
        if (signal.aborted) req.destroy(new Error('aborted'));
        else {
          // Removed when the request is over: a controller's signal lives as long as its leadership,
          // and a listener left on it kept each request (its socket, buffers: about 12 kB) for that
          // long: 1.2 GB after 100 000 writes (bench/k8s/README.md, the operator at 100 000 pods).
          const onAbort = (): void => void req.destroy(new Error('aborted'));
          signal.addEventListener('abort', onAbort, { once: true });
          req.once('close', () => signal.removeEventListener('abort', onAbort));
        }
      }
      req.end(payload);
    });
  }

  async function readAll(res: http.IncomingMessage, what: string, max = MAX_BODY_BYTES): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of res) {
      received += (c as Buffer).length;
      size += (c as Buffer).length;
      if (size > max) {
        res.destroy();
        throw new ResponseTooLargeError(what, 'body', max);
      }
      chunks.push(c as Buffer);
    }
    const body = Buffer.concat(chunks, size);
    if (res.headers['content-encoding'] !== 'gzip') return body;
    zlibModule ??= process.getBuiltinModule('node:zlib');
    const z = zlibModule;
    return new Promise((resolve, reject) => {
      // On the thread pool, and never past the cap however well the body compresses.
      z.gunzip(body, { maxOutputLength: max }, (e, out) => {
        if (!e) resolve(out);
        else reject((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? new ResponseTooLargeError(what, 'body', max) : new Error(`${what}: bad gzip body: ${e.message}`, { cause: e }));
      });
    });
  }

  return {
    config,
    async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
      // A GET answered 429 (storage initialising, priority and fairness) is retried after Retry-After.
      for (let attempt = 0; ; attempt++) {
        const res = await open(method, path, { timeoutMs: 30_000, ...o }, true);
        const body = await readAll(res, `${method} ${path}`, o.maxBodyBytes);
        const status = res.statusCode ?? 0;
        if (status === 429 && method === 'GET' && attempt < 5 && !o.signal?.aborted) {
          const after = Math.min(5, Number(res.headers['retry-after'] ?? 1) || 1);
          await new Promise((r) => setTimeout(r, after * 1000));
          continue;
        }
        if (status < 200 || status >= 300) throw apiErrorOf(method, path, status, body);
        return (body.length ? JSON.parse(body.toString('utf8')) : undefined) as T;
      }
    },
    async stream(path: string, o: RequestOptions = {}): Promise<WatchStream> {
      const res = await open('GET', path, o);
      const status = res.statusCode ?? 0;
      if (status !== 200) throw apiErrorOf('GET', path, status, await readAll(res, `GET ${path}`));
      const split = splitLines(res as AsyncIterable<Buffer>, o.maxLineBytes ?? MAX_LINE_BYTES, `GET ${path}`, (n) => {
        received += n;
      });
      async function* lines(): AsyncGenerator<unknown> {
        try {
          for await (const line of split) yield JSON.parse(line) as unknown;
        } finally {
          res.destroy();
        }
      }
      return {
        lines: lines(),
        [Symbol.dispose]() {
          res.destroy();
        },
      };
    },
    bytesReceived: () => received,
    close() {
      agent.destroy();
    },
  };
}
