/**
 * The environment contract between a capture Job and the `retina-capture` workload (names from
 * Retina's `pkg/capture/constants`; values as the capture contract defines them). `decodeWorkloadEnv`
 * reads and checks every variable and reports all bad ones at once, each error naming its variable
 * (the Job translator, job.ts, writes them). Secrets are never in this contract: they are files (see
 * `secretFiles`).
 */
import { parseDurationMs } from '../config/index.js';
import { captureBaseName } from './naming.js';
import { resolveTrigger, validateTrigger, type ResolvedTrigger } from './trigger.js';

export { captureBaseName };

export const TCPDUMP_FLAGS_ALLOWED: ReadonlySet<string> = new Set([
  '-p', '-U', '--immediate-mode', '-n', '-nn', '-v', '-vv', '-vvv', '-x', '-xx', '-X', '-XX', '-e', '-q', '-S', '-t', '-tt', '-ttt', '-tttt', '-ttttt', '-K',
]);

export interface S3Target {
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly bucket: string;
  readonly path: string;
}

export interface WorkloadEnv {
  readonly captureName: string;
  readonly nodeName: string;
  readonly podName: string | undefined;
  readonly podNamespace: string | undefined;
  /** CAPTURE_START_TIMESTAMP; the file names use it (every node of one capture shares it). */
  readonly startTimestamp: Date | undefined;
  readonly durationMs: number;
  readonly maxSizeMb: number;
  /** 0: no rotation. */
  readonly fileCount: number;
  /** 0: tcpdump's default snapshot length. */
  readonly packetSize: number;
  /** Empty: every interface (`-i any`). */
  readonly interfaces: readonly string[];
  readonly includeMetadata: boolean;
  readonly tcpdumpFilter: string;
  readonly tcpdumpRawFilter: string;
  readonly pcapFilter: string;
  readonly tcpdumpFlags: readonly string[];
  readonly netshFilter: string;
  readonly hostPath: string | undefined;
  readonly pvcPath: string | undefined;
  readonly s3: S3Target | undefined;
  readonly apiserver: string | undefined;
  /** CAPTURE_TRIGGER (JSON of spec.captureConfiguration.trigger): a triggered capture; undefined for a plain one. */
  readonly trigger: ResolvedTrigger | undefined;
}

/** Every bad variable, each message naming it. */
export class CaptureEnvError extends Error {
  override readonly name = 'CaptureEnvError';
  constructor(readonly problems: readonly string[]) {
    super(`bad capture environment: ${problems.join('; ')}`);
  }
}

/** Retina's defaults when the Job leaves a variable out (`kubectl retina capture create`'s flags). */
export const DEFAULTS = { durationMs: 60_000, maxSizeMb: 100 } as const;
const NAME_RE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const MAX_FILTER = 4096;

type Env = Readonly<Record<string, string | undefined>>;

export function decodeWorkloadEnv(env: Env): WorkloadEnv {
  const problems: string[] = [];
  const get = (k: string): string => (env[k] ?? '').trim();
  const opt = (k: string): string | undefined => get(k) || undefined;
  const required = (k: string, re?: RegExp): string => {
    const v = get(k);
    if (!v) problems.push(`${k} is required`);
    else if (re && !re.test(v)) problems.push(`${k}=${JSON.stringify(v)} is not a valid name (lowercase letters, digits, '-', '.')`);
    return v;
  };
  const int = (k: string, dflt: number, min: number): number => {
    const v = get(k);
    if (!v) return dflt;
    if (!/^\d+$/.test(v) || Number(v) < min || !Number.isSafeInteger(Number(v))) {
      problems.push(`${k}=${JSON.stringify(v)} is not an integer >= ${min}`);
      return dflt;
    }
    return Number(v);
  };
  const filter = (k: string): string => {
    const v = get(k);
    if (v.length > MAX_FILTER) problems.push(`${k} is ${v.length} characters long (at most ${MAX_FILTER})`);
    if (/[\0\n\r]/.test(v)) problems.push(`${k} holds a control character`);
    // As Retina: a filter is a BPF expression, never a way to pass tcpdump options.
    else if (v.split(/\s+/).some((t) => t.startsWith('-'))) problems.push(`${k}=${JSON.stringify(v)} holds a token starting with '-' (tcpdump options are not allowed in a filter)`);
    return v;
  };
  const absolute = (k: string): string | undefined => {
    const v = opt(k);
    if (v !== undefined && !(v.startsWith('/') || /^[A-Za-z]:([\\/]|$)/.test(v))) problems.push(`${k}=${JSON.stringify(v)} is not an absolute path`);
    return v;
  };

  const captureName = required('CAPTURE_NAME', NAME_RE);
  const nodeName = required('NODE_HOST_NAME');
  let startTimestamp: Date | undefined;
  const ts = get('CAPTURE_START_TIMESTAMP');
  if (ts) {
    startTimestamp = new Date(ts);
    if (!/^\d{4}-\d\d-\d\dT/.test(ts) || Number.isNaN(startTimestamp.getTime())) {
      problems.push(`CAPTURE_START_TIMESTAMP=${JSON.stringify(ts)} is not an RFC 3339 time`);
      startTimestamp = undefined;
    }
  }
  let durationMs: number = DEFAULTS.durationMs;
  const d = get('CAPTURE_DURATION');
  if (d) {
    const ms = parseDurationMs(d);
    if (ms === undefined || ms <= 0) problems.push(`CAPTURE_DURATION=${JSON.stringify(d)} is not a positive Go duration (e.g. 30s, 1m0s)`);
    else durationMs = ms;
  }
  const maxSizeMb = int('CAPTURE_MAX_SIZE', DEFAULTS.maxSizeMb, 1);
  const fileCount = int('CAPTURE_FILE_COUNT', 0, 0);
  const packetSize = int('CAPTURE_PACKET_SIZE', 0, 0);
  const interfaces = get('CAPTURE_INTERFACES').split(',').map((s) => s.trim()).filter(Boolean);
  for (const i of interfaces) if (!/^[\w.:@-]{1,64}$/.test(i) || i.startsWith('-')) problems.push(`CAPTURE_INTERFACES: ${JSON.stringify(i)} is not an interface name`);
  const meta = get('INCLUDE_METADATA').toLowerCase();
  if (meta && meta !== 'true' && meta !== 'false') problems.push(`INCLUDE_METADATA=${JSON.stringify(get('INCLUDE_METADATA'))} is not true or false`);
  const tcpdumpFlags = get('TCPDUMP_FLAGS').split(/\s+/).filter(Boolean);
  for (const f of tcpdumpFlags) if (!TCPDUMP_FLAGS_ALLOWED.has(f)) problems.push(`TCPDUMP_FLAGS: ${JSON.stringify(f)} is not an allowed flag (${[...TCPDUMP_FLAGS_ALLOWED].join(' ')})`);
  const netshFilter = get('NETSH_FILTER');
  try {
    parseNetshFilter(netshFilter);
  } catch (e) {
    problems.push((e as Error).message);
  }

  let s3: S3Target | undefined;
  const bucket = get('S3_BUCKET');
  if (bucket) {
    const endpoint = opt('S3_ENDPOINT');
    if (endpoint !== undefined && !/^https?:\/\/[^/\s]+/.test(endpoint)) problems.push(`S3_ENDPOINT=${JSON.stringify(endpoint)} is not an http(s) URL`);
    s3 = { endpoint, region: get('S3_REGION') || 'us-east-1', bucket, path: get('S3_PATH').replace(/^\/+|\/+$/g, '') };
  } else if (get('S3_ENDPOINT') || get('S3_PATH')) {
    problems.push('S3_BUCKET is required when S3_ENDPOINT or S3_PATH is set');
  }

  let trigger: ResolvedTrigger | undefined;
  const tj = get('CAPTURE_TRIGGER');
  if (tj) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(tj);
    } catch (e) {
      problems.push(`CAPTURE_TRIGGER is not JSON: ${(e as Error).message}`);
    }
    if (parsed !== undefined) {
      const bad = validateTrigger(parsed, 'CAPTURE_TRIGGER');
      problems.push(...bad);
      if (!bad.length) trigger = resolveTrigger(parsed as Parameters<typeof resolveTrigger>[0]);
    }
    if (interfaces.length > 1) problems.push(`CAPTURE_INTERFACES: a triggered capture (CAPTURE_TRIGGER) captures on one interface or all, not ${interfaces.length}`);
    if (fileCount > 0) problems.push('CAPTURE_FILE_COUNT: a triggered capture (CAPTURE_TRIGGER) writes one file; set 0');
  }

  const out: WorkloadEnv = {
    captureName, nodeName, podName: opt('POD_NAME'), podNamespace: opt('POD_NAMESPACE'), startTimestamp, durationMs, maxSizeMb, fileCount, packetSize,
    interfaces, includeMetadata: meta !== 'false', tcpdumpFilter: filter('TCPDUMP_FILTER'), tcpdumpRawFilter: filter('TCPDUMP_RAW_FILTER'),
    pcapFilter: filter('PCAP_FILTER'), tcpdumpFlags, netshFilter, hostPath: absolute('HOSTPATH'), pvcPath: absolute('PERSISTENT_VOLUME_CLAIM'), s3,
    apiserver: opt('APISERVER'), trigger,
  };
  if (problems.length) throw new CaptureEnvError(problems);
  return out;
}

/** The capture's BPF expression: every non-empty filter of the Job, each in parentheses, joined with `and`. */
export function combinedFilter(w: Pick<WorkloadEnv, 'tcpdumpFilter' | 'tcpdumpRawFilter' | 'pcapFilter'>): string {
  const parts = [w.tcpdumpFilter, w.tcpdumpRawFilter, w.pcapFilter].map((s) => s.trim()).filter(Boolean);
  return parts.length === 1 ? (parts[0] as string) : parts.map((p) => `(${p})`).join(' and ');
}

/** NETSH_FILTER `IPv4.Address=(10.0.0.1,10.0.0.2) IPv6.Address=(fd00::1)` → the addresses; throws naming NETSH_FILTER. */
export function parseNetshFilter(text: string): string[] {
  const out: string[] = [];
  const re = /\s*IPv([46])\.Address=\(([^)]*)\)\s*/gy;
  let pos = 0;
  const t = text.trim();
  while (pos < t.length) {
    re.lastIndex = pos;
    const m = re.exec(t);
    if (!m) throw new Error(`NETSH_FILTER=${JSON.stringify(text)}: expected IPv4.Address=(a,b) or IPv6.Address=(...) at ${JSON.stringify(t.slice(pos, pos + 20))}`);
    for (const a of (m[2] as string).split(',').map((s) => s.trim()).filter(Boolean)) {
      const ok = m[1] === '4' ? /^\d{1,3}(\.\d{1,3}){3}$/.test(a) : /^[0-9a-fA-F:.]+$/.test(a) && a.includes(':');
      if (!ok) throw new Error(`NETSH_FILTER: ${JSON.stringify(a)} is not an IPv${m[1]} address`);
      out.push(a);
    }
    pos = re.lastIndex;
  }
  return out;
}

/** Where the Job mounts its Secrets, under `root` (`/` in a pod; tests use a folder). */
export function secretFiles(root: string): { blobUrl: string; s3AccessKeyId: string; s3SecretAccessKey: string } {
  const r = root.replace(/[\\/]+$/, '');
  return {
    blobUrl: `${r}/etc/blob-upload-secret/blob-upload-url`,
    s3AccessKeyId: `${r}/etc/s3-upload-secret/s3-access-key-id`,
    s3SecretAccessKey: `${r}/etc/s3-upload-secret/s3-secret-access-key`,
  };
}

