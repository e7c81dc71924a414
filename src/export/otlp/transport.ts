/**
 * The two OTLP transports: gRPC (LogsService/Export over @grpc/grpc-js) and HTTP (POST /v1/logs,
 * protobuf or JSON). Each sends one ExportLogsServiceRequest and says what happened, classified as
 * the OTLP specification says (docs: "OTLP/gRPC Throttling", "OTLP/HTTP Throttling"):
 * - ok, with the count the collector rejected in a partial success;
 * - retry: the collector is down, busy or throttling (gRPC UNAVAILABLE, RESOURCE_EXHAUSTED,
 *   DEADLINE_EXCEEDED, ABORTED, CANCELLED, OUT_OF_RANGE, DATA_LOSS; HTTP 429, 502, 503, 504, a
 *   network error or a timeout), with the delay the collector asked for (gRPC RetryInfo in
 *   grpc-status-details-bin, HTTP Retry-After) when it asked;
 * - reject: anything else (bad request, unauthenticated, ...): retrying would not help.
 * Protobuf requests are written by wire.ts (protobufjs only decodes the responses).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import type { FlowLogsOtlpConfig } from '../../config/index.js';
import { SCOPE_NAME, toJsonRequest, type OtlpLogRecord, type OtlpResourceInfo } from './encode.js';
import { encodeLogsRequest } from './wire.js';

const gzip = promisify(gzipCb);
// Not `import 'node:http'`: its ES namespace loads undici (eslint no-restricted-imports).
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

export type SendResult =
  | { readonly kind: 'ok'; readonly rejected: number; readonly message?: string }
  | { readonly kind: 'retry'; readonly retryAfterMs?: number; readonly message: string }
  | { readonly kind: 'reject'; readonly message: string };

/** Disposing it closes its connections (the sink disposes it last). */
export interface Transport extends Disposable {
  send(records: readonly OtlpLogRecord[]): Promise<SendResult>;
}

const SERVICE = 'opentelemetry.proto.collector.logs.v1.LogsService';
const SERVICE_PROTO = 'opentelemetry/proto/collector/logs/v1/logs_service.proto';

export interface ExportCodec {
  serialize(req: object): Buffer;
  deserializeResponse(buf: Buffer): { partial_success?: { rejected_log_records?: number; error_message?: string } };
}

/** The OTLP logs service's codec, from the vendored protos (`protoDir` holds opentelemetry/proto/...). */
export function loadExportCodec(protoDir: string): ExportCodec {
  const def = protoLoader.loadSync(join(protoDir, SERVICE_PROTO), { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: true, includeDirs: [protoDir] });
  const svc = def[SERVICE] as protoLoader.ServiceDefinition | undefined;
  const m = svc?.['Export'];
  if (!m) throw new Error(`${SERVICE_PROTO} has no ${SERVICE}/Export`);
  return { serialize: (req) => m.requestSerialize(req), deserializeResponse: (buf) => m.responseDeserialize(buf) as ReturnType<ExportCodec['deserializeResponse']> };
}

export interface TransportOptions {
  readonly config: FlowLogsOtlpConfig;
  readonly resource: OtlpResourceInfo;
  readonly codec: ExportCodec;
  readonly userAgent: string;
}

function tlsFiles(c: FlowLogsOtlpConfig): { ca?: Buffer; cert?: Buffer; key?: Buffer } {
  return {
    ...(c.tls.caFile ? { ca: readFileSync(c.tls.caFile) } : {}),
    ...(c.tls.certFile ? { cert: readFileSync(c.tls.certFile), key: readFileSync(c.tls.keyFile) } : {}),
  };
}

function okResult(resp: ReturnType<ExportCodec['deserializeResponse']> | undefined): SendResult {
  const rejected = Number(resp?.partial_success?.rejected_log_records ?? 0);
  const message = resp?.partial_success?.error_message;
  return { kind: 'ok', rejected: Number.isFinite(rejected) ? rejected : 0, ...(message ? { message } : {}) };
}

// ---- gRPC ----

const GRPC_RETRYABLE = new Set([
  grpc.status.UNAVAILABLE, grpc.status.RESOURCE_EXHAUSTED, grpc.status.DEADLINE_EXCEEDED, grpc.status.ABORTED,
  grpc.status.CANCELLED, grpc.status.OUT_OF_RANGE, grpc.status.DATA_LOSS,
]);

/** Reads a protobuf varint at `p`; [value, next position] or undefined past the end. */
function varint(b: Uint8Array, p: number): [number, number] | undefined {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 10 && p < b.length; i++) {
    const byte = b[p++]!;
    v += (byte & 0x7f) * mul;
    if (byte < 0x80) return [v, p];
    mul *= 128;
  }
  return undefined;
}

/** Fields of one protobuf message: field number → varint values and length-delimited bytes. */
function fields(b: Uint8Array): Map<number, Array<number | Uint8Array>> {
  const out = new Map<number, Array<number | Uint8Array>>();
  let p = 0;
  while (p < b.length) {
    const t = varint(b, p);
    if (!t) break;
    p = t[1];
    const no = Math.floor(t[0] / 8);
    const wire = t[0] & 7;
    let val: number | Uint8Array;
    if (wire === 0) {
      const v = varint(b, p);
      if (!v) break;
      [val, p] = v;
    } else if (wire === 2) {
      const l = varint(b, p);
      if (!l || l[1] + l[0] > b.length) break;
      val = b.subarray(l[1], l[1] + l[0]);
      p = l[1] + l[0];
    } else if (wire === 1 || wire === 5) {
      p += wire === 1 ? 8 : 4;
      val = 0;
    } else break;
    const list = out.get(no) ?? [];
    list.push(val);
    out.set(no, list);
  }
  return out;
}

/**
 * The retry delay of a google.rpc.Status (grpc-status-details-bin) carrying a google.rpc.RetryInfo
 * (Status.details: Any{type_url, value}; RetryInfo.retry_delay: Duration{seconds, nanos}).
 */
export function retryInfoDelayMs(statusDetails: Uint8Array): number | undefined {
  for (const any of fields(statusDetails).get(3) ?? []) {
    if (!(any instanceof Uint8Array)) continue;
    const a = fields(any);
    const url = a.get(1)?.[0];
    if (!(url instanceof Uint8Array) || !Buffer.from(url).toString().endsWith('google.rpc.RetryInfo')) continue;
    const value = a.get(2)?.[0];
    if (!(value instanceof Uint8Array)) continue;
    const dur = fields(value).get(1)?.[0];
    if (!(dur instanceof Uint8Array)) return 0;
    const d = fields(dur);
    const s = Number(d.get(1)?.[0] ?? 0);
    const n = Number(d.get(2)?.[0] ?? 0);
    return s * 1000 + Math.round(n / 1e6);
  }
  return undefined;
}

function grpcTarget(u: URL): string {
  return `${u.hostname.includes(':') ? `[${u.hostname.replace(/^\[|\]$/g, '')}]` : u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 4317)}`;
}

export function grpcTransport(o: TransportOptions): Transport {
  const c = o.config;
  const u = new URL(c.endpoint);
  let creds: grpc.ChannelCredentials;
  if (u.protocol === 'https:') {
    const f = tlsFiles(c);
    creds = grpc.credentials.createSsl(f.ca ?? null, f.key ?? null, f.cert ?? null, c.tls.insecureSkipVerify ? { rejectUnauthorized: false, checkServerIdentity: () => undefined } : {});
  } else creds = grpc.credentials.createInsecure();
  const options: grpc.ChannelOptions = {
    'grpc.primary_user_agent': o.userAgent,
    'grpc.max_send_message_length': 64 << 20,
    ...(c.tls.serverName ? { 'grpc.ssl_target_name_override': c.tls.serverName, 'grpc.default_authority': c.tls.serverName } : {}),
    ...(c.compression === 'gzip' ? { 'grpc.default_compression_algorithm': grpc.compressionAlgorithms.gzip } : {}),
  };
  const client = new grpc.Client(grpcTarget(u), creds, options);
  const path = `/${SERVICE}/Export`;
  const identity = (b: Buffer): Buffer => b;
  return {
    send(records) {
      let body: Buffer;
      try {
        body = encodeLogsRequest(records, o.resource, SCOPE_NAME);
      } catch (e) {
        return Promise.resolve({ kind: 'reject', message: `encode: ${(e as Error).message}` });
      }
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(c.headers)) md.set(k, v);
      return new Promise<SendResult>((resolve) => {
        client.makeUnaryRequest(path, identity, identity, body, md, { deadline: Date.now() + c.timeoutMs }, (err, resp) => {
          if (!err) {
            let decoded;
            try {
              decoded = resp ? o.codec.deserializeResponse(resp) : undefined;
            } catch {
              decoded = undefined;
            }
            resolve(okResult(decoded));
            return;
          }
          const message = `gRPC ${grpc.status[err.code] ?? err.code}: ${err.details || err.message}`;
          if (!GRPC_RETRYABLE.has(err.code)) {
            resolve({ kind: 'reject', message });
            return;
          }
          const details = err.metadata?.get('grpc-status-details-bin')[0];
          const delay = details instanceof Buffer ? retryInfoDelayMs(details) : undefined;
          // RESOURCE_EXHAUSTED is retryable only with RetryInfo (the collector's memory limiter
          // sends it); without, the specification says it is not, but a queue-full collector
          // recovers, so it is retried with our backoff.
          resolve({ kind: 'retry', message, ...(delay !== undefined ? { retryAfterMs: delay } : {}) });
        });
      });
    },
    [Symbol.dispose]() {
      client.close();
    },
  };
}

// ---- HTTP ----

const HTTP_RETRYABLE = new Set([429, 502, 503, 504]);

/** Retry-After: delay-seconds or an HTTP date; ms from `now`, or undefined. */
export function parseRetryAfter(v: string | undefined, now = Date.now()): number | undefined {
  if (v === undefined) return undefined;
  const s = v.trim();
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const t = Date.parse(s);
  return Number.isFinite(t) ? Math.max(0, t - now) : undefined;
}

/** The URL requests go to: the endpoint as given, with /v1/logs when it has no path. */
export function httpLogsUrl(endpoint: string): URL {
  const u = new URL(endpoint);
  if (u.pathname === '' || u.pathname === '/') u.pathname = '/v1/logs';
  return u;
}

export function httpTransport(o: TransportOptions): Transport {
  const c = o.config;
  const u = httpLogsUrl(c.endpoint);
  const json = c.protocol === 'http/json';
  const secure = u.protocol === 'https:';
  const agent = secure
    ? new https.Agent({
      keepAlive: true, maxSockets: 1, ...tlsFiles(c),
      rejectUnauthorized: !c.tls.insecureSkipVerify,
      ...(c.tls.serverName ? { servername: c.tls.serverName } : {}),
    })
    : new http.Agent({ keepAlive: true, maxSockets: 1 });
  const request = secure ? https.request : http.request;
  const baseHeaders: Record<string, string> = {
    ...c.headers,
    'content-type': json ? 'application/json' : 'application/x-protobuf',
    'user-agent': o.userAgent,
    ...(c.compression === 'gzip' ? { 'content-encoding': 'gzip' } : {}),
  };
  return {
    async send(records) {
      let body: Buffer;
      try {
        body = json ? Buffer.from(toJsonRequest(records, o.resource)) : encodeLogsRequest(records, o.resource, SCOPE_NAME);
        if (c.compression === 'gzip') body = await gzip(body);
      } catch (e) {
        return { kind: 'reject', message: `encode: ${(e as Error).message}` };
      }
      return new Promise<SendResult>((resolve) => {
        let settled = false;
        const done = (r: SendResult): void => {
          if (settled) return;
          settled = true;
          resolve(r);
        };
        const req = request(u, { method: 'POST', agent, headers: { ...baseHeaders, 'content-length': String(body.length) }, timeout: c.timeoutMs }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('error', (e) => done({ kind: 'retry', message: `HTTP response: ${e.message}` }));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const text = Buffer.concat(chunks);
            if (status >= 200 && status < 300) {
              let decoded;
              try {
                if (text.length) decoded = json ? (JSON.parse(text.toString()) as { partialSuccess?: { rejectedLogRecords?: string | number; errorMessage?: string } }) : o.codec.deserializeResponse(text);
              } catch {
                decoded = undefined;
              }
              const ps = decoded && 'partialSuccess' in decoded ? decoded.partialSuccess : undefined;
              done(okResult(ps ? { partial_success: { rejected_log_records: Number(ps.rejectedLogRecords ?? 0), ...(ps.errorMessage ? { error_message: ps.errorMessage } : {}) } } : (decoded as ReturnType<ExportCodec['deserializeResponse']> | undefined)));
              return;
            }
            const message = `HTTP ${status}: ${text.subarray(0, 200).toString().replace(/[^\x20-\x7e]+/g, ' ').trim()}`;
            if (!HTTP_RETRYABLE.has(status)) {
              done({ kind: 'reject', message });
              return;
            }
            const after = parseRetryAfter(res.headers['retry-after']);
            done({ kind: 'retry', message, ...(after !== undefined ? { retryAfterMs: after } : {}) });
          });
        });
        req.on('timeout', () => req.destroy(new Error(`no answer in ${c.timeoutMs} ms`)));
        req.on('error', (e) => done({ kind: 'retry', message: `HTTP: ${e.message}` }));
        req.end(body);
      });
    },
    [Symbol.dispose]() {
      agent.destroy();
    },
  };
}
