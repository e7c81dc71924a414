/**
 * Keys of the OTLP flow-log sink (issue 28): flows as OTLP log records to an OpenTelemetry
 * collector over OTLP/gRPC or OTLP/HTTP (protobuf or JSON). Off while `flowLogs.otlp.endpoint` is
 * empty. Names follow the OpenTelemetry exporter settings (OTEL_EXPORTER_OTLP_*: endpoint, protocol
 * `grpc | http/protobuf | http/json`, headers `k=v,k2=v2`, timeout, certificate files).
 */
import { ConfigError, ConfigErrors, InvalidValue } from './errors.js';
import type { LoadedValues } from './load.js';
import { boolKey, durationKey, enumKey, intKey, stringKey, type KeySpec } from './schema.js';

export const OTLP_PROTOCOLS = ['grpc', 'http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export interface FlowLogsOtlpConfig {
  /** '' when the OTLP sink is off. http(s)://host:port[/path]; for HTTP a bare host:port gets /v1/logs. */
  readonly endpoint: string;
  readonly protocol: OtlpProtocol;
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: {
    /** PEM CA bundle to verify the collector with ('' for the system's roots). */
    readonly caFile: string;
    /** Client certificate and key (both or neither). */
    readonly certFile: string;
    readonly keyFile: string;
    readonly serverName: string;
    readonly insecureSkipVerify: boolean;
  };
  readonly timeoutMs: number;
  readonly queueSize: number;
  readonly batchSize: number;
  readonly flushIntervalMs: number;
  readonly compression: 'none' | 'gzip';
}

/** The header names HTTP and gRPC allow (RFC 9110 token), lower-cased as gRPC metadata needs. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * `k=v,k2=v2` (OTEL_EXPORTER_OTLP_HEADERS: values URL-decoded), or a YAML list of `k=v` strings. Not
 * a YAML map: the loader reads nested maps as dotted keys.
 */
export function parseHeaders(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  let parts: unknown[];
  if (Array.isArray(raw)) parts = raw;
  else if (typeof raw === 'string') parts = raw.split(',');
  else throw new InvalidValue();
  for (const item of parts) {
    if (typeof item !== 'string') throw new InvalidValue('name=value strings');
    const part = item.trim();
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw new InvalidValue(`name=value pairs (bad pair: ${JSON.stringify(part.replace(/=.*/, '=...'))})`);
    const name = part.slice(0, eq).trim().toLowerCase();
    if (!HEADER_NAME.test(name)) throw new InvalidValue(`header names are HTTP tokens (bad name: ${JSON.stringify(name)})`);
    let value: string;
    try {
      value = decodeURIComponent(part.slice(eq + 1)).trim();
    } catch {
      throw new InvalidValue(`URL-encoded values (bad value of ${name})`);
    }
    if (/[\r\n\0]/.test(value)) throw new InvalidValue(`header values without line breaks (header ${name})`);
    out[name] = value;
  }
  return out;
}

const headersKey: KeySpec<Readonly<Record<string, string>>> = {
  key: 'flowLogs.otlp.headers', default: {}, defaultText: '{}',
  doc: 'Ours: headers sent with every export (e.g. authorization=Bearer%20<token>): name=value pairs separated by commas as OTEL_EXPORTER_OTLP_HEADERS (values URL-encoded), or a list of name=value strings.',
  allowed: 'name=value,name2=value2 (values URL-encoded) or a list of name=value strings',
  schema: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string', pattern: '^[^=]+=' } }] },
  parse: (raw) => Object.freeze(parseHeaders(raw)),
};

export function flowLogsOtlpKeys() {
  return {
    otlpEndpoint: stringKey('flowLogs.otlp.endpoint', '', 'Ours: the OpenTelemetry collector flow logs are sent to as OTLP log records (\'\' for none): http://host:4317 (gRPC) or http://host:4318 (HTTP; /v1/logs is added when the URL has no path); https:// for TLS.'),
    otlpProtocol: enumKey<OtlpProtocol>('flowLogs.otlp.protocol', 'grpc', OTLP_PROTOCOLS, 'Ours: OTLP transport: grpc, http/protobuf or http/json.'),
    otlpHeaders: headersKey,
    otlpTlsCaFile: stringKey('flowLogs.otlp.tls.caFile', '', 'Ours: PEM CA bundle that verifies the collector (\'\' for the system\'s roots); https:// endpoints only.'),
    otlpTlsCertFile: stringKey('flowLogs.otlp.tls.certFile', '', 'Ours: PEM client certificate for mutual TLS (with tls.keyFile).'),
    otlpTlsKeyFile: stringKey('flowLogs.otlp.tls.keyFile', '', 'Ours: PEM private key of tls.certFile.'),
    otlpTlsServerName: stringKey('flowLogs.otlp.tls.serverName', '', 'Ours: the name the collector\'s certificate must carry (\'\' for the endpoint\'s host).'),
    otlpTlsInsecureSkipVerify: boolKey('flowLogs.otlp.tls.insecureSkipVerify', false, 'Ours: do not verify the collector\'s certificate (testing only).'),
    otlpTimeout: durationKey('flowLogs.otlp.timeout', 10_000, 'Ours: how long one export request may take before it counts as failed and is retried.', { minMs: 100 }),
    otlpQueueSize: intKey('flowLogs.otlp.queueSize', 10_000, 'Ours: flow records held while the collector is slow or down; beyond it new records are dropped and counted (flow_log_records_total{sink="otlp",result="dropped",reason="queue_full"}).', { min: 1, max: 10_000_000 }),
    otlpBatchSize: intKey('flowLogs.otlp.batchSize', 512, 'Ours: most log records per export request.', { min: 1, max: 100_000 }),
    otlpFlushInterval: durationKey('flowLogs.otlp.flushInterval', 1_000, 'Ours: how long a record waits for a full batch before a smaller batch is sent.', { minMs: 10 }),
    otlpCompression: enumKey<'none' | 'gzip'>('flowLogs.otlp.compression', 'none', ['none', 'gzip'], 'Ours: compression of export requests: none or gzip.'),
  };
}

export type FlowLogsOtlpKeys = ReturnType<typeof flowLogsOtlpKeys>;

/** The endpoint as a URL, or the reason it is not one (for the error naming the key). */
export function parseOtlpEndpoint(s: string): URL | string {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return 'a URL such as http://collector:4317 or https://collector:4318';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `a URL with scheme http or https (not ${u.protocol.replace(/:$/, '')})`;
  if (u.username || u.password) return 'a URL without user info (send credentials with flowLogs.otlp.headers)';
  return u;
}

/** Throws ConfigErrors naming each key that cannot work with the others. */
export function flowLogsOtlpConfig(keys: FlowLogsOtlpKeys, v: LoadedValues): FlowLogsOtlpConfig {
  const errors: ConfigError[] = [];
  const endpoint = v.get(keys.otlpEndpoint);
  const certFile = v.get(keys.otlpTlsCertFile);
  const keyFile = v.get(keys.otlpTlsKeyFile);
  if (endpoint !== '') {
    const u = parseOtlpEndpoint(endpoint);
    if (typeof u === 'string') errors.push(new ConfigError(keys.otlpEndpoint.key, endpoint, u, v.sourceOf(keys.otlpEndpoint.key)));
    else if (u.protocol === 'http:') {
      for (const k of [keys.otlpTlsCaFile, keys.otlpTlsCertFile, keys.otlpTlsKeyFile, keys.otlpTlsServerName]) {
        if (v.get(k) !== '') errors.push(new ConfigError(k.key, v.get(k), `'' while flowLogs.otlp.endpoint is http:// (use https:// for TLS)`, v.sourceOf(k.key)));
      }
    }
  }
  if ((certFile === '') !== (keyFile === '')) {
    const missing = certFile === '' ? keys.otlpTlsCertFile : keys.otlpTlsKeyFile;
    const other = certFile === '' ? keys.otlpTlsKeyFile : keys.otlpTlsCertFile;
    errors.push(new ConfigError(missing.key, '', `a file path: ${other.key} is set, and a client certificate needs both the certificate and the key`, v.sourceOf(missing.key)));
  }
  if (v.get(keys.otlpBatchSize) > v.get(keys.otlpQueueSize)) {
    errors.push(new ConfigError(keys.otlpBatchSize.key, v.get(keys.otlpBatchSize), `at most flowLogs.otlp.queueSize (${v.get(keys.otlpQueueSize)})`, v.sourceOf(keys.otlpBatchSize.key)));
  }
  if (errors.length) throw new ConfigErrors(errors);
  return Object.freeze({
    endpoint,
    protocol: v.get(keys.otlpProtocol),
    headers: v.get(keys.otlpHeaders),
    tls: Object.freeze({
      caFile: v.get(keys.otlpTlsCaFile), certFile, keyFile,
      serverName: v.get(keys.otlpTlsServerName),
      insecureSkipVerify: v.get(keys.otlpTlsInsecureSkipVerify),
    }),
    timeoutMs: v.get(keys.otlpTimeout),
    queueSize: v.get(keys.otlpQueueSize),
    batchSize: v.get(keys.otlpBatchSize),
    flushIntervalMs: v.get(keys.otlpFlushInterval),
    compression: v.get(keys.otlpCompression),
  });
}
