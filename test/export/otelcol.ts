/**
 * The real OpenTelemetry Collector of the OTLP flow-log tests (hack/otelcol/build.sh: core v0.161.0
 * otlp receiver, contrib file exporter, bearer-token auth extension), started with a config written
 * here; the file exporter's OTLP/JSON lines are the oracle of what arrived.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The collector binary (hack/otelcol/build.sh answers at once once built; make test builds it). */
export function otelcolBinary(): string {
  const r = spawnSync('bash', [join(ROOT, 'hack/otelcol/build.sh')], { encoding: 'utf8', env: { ...process.env, OTELCOL_BUILD_IF_MISSING: 'no' } });
  if (r.status !== 0) throw new Error(`the test collector is not built: ${r.stderr.trim()} (make test builds it: make otelcol-tools)`);
  return join(r.stdout.trim(), 'otelcol');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

export interface CollectorOptions {
  readonly dir: string;
  readonly grpcPort: number;
  readonly httpPort: number;
  /** Server certificate and key; with clientCa, clients must present a certificate it signed. */
  readonly tls?: { readonly cert: string; readonly key: string; readonly clientCa?: string };
  /** The receiver requires `authorization: Bearer <token>` (bearertokenauth extension). */
  readonly bearerToken?: string;
}

export interface Collector {
  readonly out: string;
  stop(): Promise<void>;
}

function tlsBlock(o: CollectorOptions): string {
  if (!o.tls) return '';
  return `
        tls:
          cert_file: ${o.tls.cert}
          key_file: ${o.tls.key}${o.tls.clientCa ? `\n          client_ca_file: ${o.tls.clientCa}` : ''}`;
}

function authBlock(o: CollectorOptions): string {
  return o.bearerToken ? '\n        auth:\n          authenticator: bearertokenauth' : '';
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });
}

/** Starts the collector; resolves once both receivers accept connections. */
export async function startCollector(o: CollectorOptions, name = 'otelcol'): Promise<Collector> {
  const out = join(o.dir, `${name}-out.jsonl`);
  const config = join(o.dir, `${name}.yaml`);
  writeFileSync(config, `${o.bearerToken ? `extensions:\n  bearertokenauth:\n    token: ${JSON.stringify(o.bearerToken)}\n` : ''}receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${o.grpcPort}${tlsBlock(o)}${authBlock(o)}
      http:
        endpoint: 127.0.0.1:${o.httpPort}${tlsBlock(o)}${authBlock(o)}
exporters:
  file:
    path: ${out}
    flush_interval: 50ms
service:
  ${o.bearerToken ? 'extensions: [bearertokenauth]\n  ' : ''}telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [file]
`);
  const child: ChildProcess = spawn(otelcolBinary(), ['--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the collector exited: ${stderr.slice(-2000)}`);
    if ((await portOpen(o.grpcPort)) && (await portOpen(o.httpPort))) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the collector did not listen in 30 s: ${stderr.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    out,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    },
  };
}

export interface ArrivedRecord {
  readonly resource: Record<string, unknown>;
  readonly scope: { name?: string; version?: string };
  readonly timeUnixNano: string;
  readonly observedTimeUnixNano: string;
  readonly body: unknown;
  readonly attributes: Record<string, unknown>;
}

type J = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function attrs(list: J[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) {
    const v = kv['value'] as J;
    out[kv['key'] as string] = 'stringValue' in v ? v['stringValue'] : 'intValue' in v ? Number(v['intValue']) : v;
  }
  return out;
}

/** Every log record the file exporter wrote, in order. */
export function arrived(out: string): ArrivedRecord[] {
  if (!existsSync(out)) return [];
  const records: ArrivedRecord[] = [];
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const req = JSON.parse(line) as J;
    for (const rl of (req['resourceLogs'] ?? []) as J[]) {
      const resource = attrs(rl['resource']?.['attributes']);
      for (const sl of (rl['scopeLogs'] ?? []) as J[]) {
        for (const lr of (sl['logRecords'] ?? []) as J[]) {
          records.push({
            resource, scope: sl['scope'] ?? {}, timeUnixNano: lr['timeUnixNano'], observedTimeUnixNano: lr['observedTimeUnixNano'],
            body: lr['body']?.['stringValue'] ?? lr['body'], attributes: attrs(lr['attributes']),
          });
        }
      }
    }
  }
  return records;
}

/** Waits until `n` records arrived (then a little longer, so extra ones would show). */
export async function waitArrived(out: string, n: number, timeoutMs = 30_000): Promise<ArrivedRecord[]> {
  const deadline = Date.now() + timeoutMs;
  while (arrived(out).length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 300));
  return arrived(out);
}

/** A client certificate (clientAuth) signed by the CA, for mutual TLS. */
export function makeClientCert(dir: string, ca: { cert: string; key: string }, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, 'extendedKeyUsage=clientAuth\n');
  const openssl = (args: string[]): void => void execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${name}`]);
  openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-days', '1', '-extfile', ext, '-out', cert]);
  return { cert, key };
}
