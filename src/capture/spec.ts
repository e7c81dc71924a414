/**
 * A Capture's spec, checked and compiled: every problem is named by its field path
 * (`spec.captureConfiguration.filters.include[1]: ...`), so the operator can put it in a condition
 * and the CLI can print it. Filters compile as Retina's do: `(inc1 or inc2) and not (exc1 or exc2)`.
 */
import { isIP } from 'node:net';
import { formatDurationMs, parseDurationMs } from '../config/index.js';
import type { CaptureSpec, LabelSelector } from '../k8s/index.js';
import { resolveTrigger, validateTrigger } from './trigger.js';

export const DEFAULT_DURATION_MS = 60_000;
export const DEFAULT_MAX_CAPTURE_SIZE_MB = 100;
export const MAX_FILTER_LENGTH = 1024;
export const MAX_IPS = 100;

export type TargetKind = 'nodeSelector' | 'podSelector' | 'podNames';

/** One parsed filter entry: an address (or none = any) and a port (or none = any). */
export interface FilterEntry {
  readonly ip: string | undefined;
  readonly port: number | undefined;
}

function parsePort(s: string): number | undefined {
  if (!/^\d{1,5}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 && n <= 65535 ? n : undefined;
}

/**
 * Retina's filter syntax: `IP`, `IP:port`, `*:port`, `IP:*`, `port`; IPv6 as `fd00::1`, `[fd00::1]`,
 * `[fd00::1]:80` or `[fd00::1]:*`. Returns undefined when the entry is none of them.
 */
export function parseFilterEntry(text: string): FilterEntry | undefined {
  const s = text.trim();
  if (!s) return undefined;
  const bracket = /^\[([^\]]+)\](?::(\*|\d+))?$/.exec(s);
  if (bracket) {
    const ip = bracket[1] as string;
    if (isIP(ip) !== 6) return undefined;
    const p = bracket[2];
    if (p === undefined || p === '*') return { ip, port: undefined };
    const port = parsePort(p);
    return port === undefined ? undefined : { ip, port };
  }
  if (isIP(s) === 6) return { ip: s, port: undefined };
  if (isIP(s) === 4) return { ip: s, port: undefined };
  const port = parsePort(s);
  if (port !== undefined) return { ip: undefined, port };
  const i = s.lastIndexOf(':');
  if (i < 0) return undefined;
  const host = s.slice(0, i);
  const p = s.slice(i + 1);
  if (host === '*' && p === '*') return undefined;
  if (host !== '*' && isIP(host) !== 4) return undefined;
  const ip = host === '*' ? undefined : host;
  if (p === '*') return { ip, port: undefined };
  const n = parsePort(p);
  return n === undefined ? undefined : { ip, port: n };
}

function entryExpr(e: FilterEntry): string {
  if (e.ip !== undefined && e.port !== undefined) return `(host ${e.ip} and port ${e.port})`;
  if (e.ip !== undefined) return `host ${e.ip}`;
  return `port ${e.port}`;
}

/** `(inc1 or inc2) and not (exc1 or exc2)`; '' when both lists are empty. Entries must be valid. */
export function compileFilters(include: readonly string[] = [], exclude: readonly string[] = []): string {
  const inc = include.map((x) => parseFilterEntry(x)).filter((x): x is FilterEntry => x !== undefined).map(entryExpr);
  const exc = exclude.map((x) => parseFilterEntry(x)).filter((x): x is FilterEntry => x !== undefined).map(entryExpr);
  const parts: string[] = [];
  if (inc.length) parts.push(`(${inc.join(' or ')})`);
  if (exc.length) parts.push(`not (${exc.join(' or ')})`);
  return parts.join(' and ');
}

/** `host a or host b` for a pod target's IPs (v4 and v6 alike); '' for none. */
export function hostsFilter(ips: readonly string[]): string {
  return ips.map((ip) => `host ${ip}`).join(' or ');
}

/** sourceIPs AND destinationIPs: `(src host a or src host b) and (dst host c)`. */
export function srcDstFilter(src: readonly string[] = [], dst: readonly string[] = []): string {
  const parts: string[] = [];
  if (src.length) parts.push(`(${src.map((ip) => `src host ${ip}`).join(' or ')})`);
  if (dst.length) parts.push(`(${dst.map((ip) => `dst host ${ip}`).join(' or ')})`);
  return parts.join(' and ');
}

/** Every non-empty part in parentheses, joined with `and`. */
export function andAll(parts: readonly string[]): string {
  const p = parts.filter((x) => x.trim() !== '');
  if (p.length <= 1) return p[0] ?? '';
  return p.map((x) => `(${x})`).join(' and ');
}

/** The Windows provider's address list: `IPv4.Address=(a,b) IPv6.Address=(c)`. */
export function netshFilter(ips: readonly string[]): string {
  const v4 = ips.filter((ip) => isIP(ip) === 4);
  const v6 = ips.filter((ip) => isIP(ip) === 6);
  const parts: string[] = [];
  if (v4.length) parts.push(`IPv4.Address=(${v4.join(',')})`);
  if (v6.length) parts.push(`IPv6.Address=(${v6.join(',')})`);
  return parts.join(' ');
}

/** Go's time.Duration String(): `1m0s`, `30s`, `1h0m0s`, `500ms`. */
export function goDuration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  const sec = `${Number.isInteger(s) ? s : s.toFixed(3).replace(/0+$/, '')}s`;
  if (h) return `${h}h${m}m${sec}`;
  if (m) return `${m}m${sec}`;
  return sec;
}

export { formatDurationMs };

function checkBpf(field: string, value: string | undefined, errors: string[]): void {
  if (value === undefined || value === '') return;
  if (value.length > MAX_FILTER_LENGTH) errors.push(`${field}: ${value.length} characters; at most ${MAX_FILTER_LENGTH}`);
  const flag = value.split(/\s+/).find((t) => t.startsWith('-'));
  if (flag !== undefined) errors.push(`${field}: ${JSON.stringify(flag)} looks like a tcpdump flag; only a filter expression (BPF syntax) is allowed`);
}

function checkSelector(field: string, sel: LabelSelector | undefined, errors: string[]): void {
  if (sel === undefined) return;
  if (typeof sel !== 'object' || sel === null) {
    errors.push(`${field}: must be a label selector`);
    return;
  }
  for (const [i, e] of (sel.matchExpressions ?? []).entries()) {
    const f = `${field}.matchExpressions[${i}]`;
    if (!e.key) errors.push(`${f}.key: required`);
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator)) errors.push(`${f}.operator: ${JSON.stringify(e.operator)}; allowed: In, NotIn, Exists, DoesNotExist`);
    else if ((e.operator === 'In' || e.operator === 'NotIn') && !(e.values ?? []).length) errors.push(`${f}.values: ${e.operator} needs at least one value`);
    else if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && (e.values ?? []).length) errors.push(`${f}.values: ${e.operator} takes no values`);
  }
}

/** The kind of target the spec names (after validation, exactly one). */
export function targetKind(spec: CaptureSpec): TargetKind | undefined {
  const t = spec.captureConfiguration?.captureTarget ?? {};
  if (t.podNames?.length) return 'podNames';
  if (t.namespaceSelector || t.podSelector) return 'podSelector';
  if (t.nodeSelector) return 'nodeSelector';
  return undefined;
}

/** A host path under the base dir; throws when it escapes (absolute, `..`). */
export function resolveHostPath(baseDir: string, rel: string): string {
  if (rel.startsWith('/') || /^[A-Za-z]:[\\/]/.test(rel) || rel.split(/[\\/]/).includes('..')) throw new Error(`hostPath ${JSON.stringify(rel)} must be relative, without ..`);
  const base = baseDir.replace(/\/+$/, '');
  const sub = rel.replace(/^\.\/?/, '').replace(/\/+$/, '');
  return sub ? `${base}/${sub}` : base;
}

/** Every problem of the spec, each naming its field; [] when valid. */
export function validateCaptureSpec(spec: CaptureSpec | undefined): string[] {
  const errors: string[] = [];
  if (!spec || typeof spec !== 'object') return ['spec: required'];
  const cc = spec.captureConfiguration;
  if (!cc || typeof cc !== 'object') return ['spec.captureConfiguration: required'];
  const t = cc.captureTarget;
  const tf = 'spec.captureConfiguration.captureTarget';
  if (!t || typeof t !== 'object') errors.push(`${tf}: required`);
  else {
    const hasNode = t.nodeSelector !== undefined;
    const hasPodSel = t.namespaceSelector !== undefined || t.podSelector !== undefined;
    const hasNames = (t.podNames ?? []).length > 0;
    if (hasNode && hasPodSel) errors.push(`${tf}: nodeSelector cannot be combined with namespaceSelector or podSelector`);
    if (hasNames && (hasNode || hasPodSel)) errors.push(`${tf}: podNames cannot be combined with selectors`);
    if (!hasNode && !hasPodSel && !hasNames) errors.push(`${tf}: set one of nodeSelector, namespaceSelector+podSelector or podNames`);
    if (hasPodSel && (t.namespaceSelector === undefined || t.podSelector === undefined)) errors.push(`${tf}: namespaceSelector and podSelector go together (use {} to select all)`);
    checkSelector(`${tf}.nodeSelector`, t.nodeSelector, errors);
    checkSelector(`${tf}.namespaceSelector`, t.namespaceSelector, errors);
    checkSelector(`${tf}.podSelector`, t.podSelector, errors);
    for (const [i, n] of (t.podNames ?? []).entries()) {
      if (!/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(n)) errors.push(`${tf}.podNames[${i}]: ${JSON.stringify(n)} is not a pod name or namespace/name`);
    }
  }
  for (const which of ['include', 'exclude'] as const) {
    for (const [i, f] of (cc.filters?.[which] ?? []).entries()) {
      if (parseFilterEntry(f) === undefined) errors.push(`spec.captureConfiguration.filters.${which}[${i}]: ${JSON.stringify(f)} is not IP, IP:port, *:port, IP:* or port (IPv6 in brackets when a port follows: [fd00::1]:80)`);
    }
  }
  checkBpf('spec.captureConfiguration.tcpdumpFilter', cc.tcpdumpFilter, errors);
  const o = cc.captureOption ?? {};
  const of = 'spec.captureConfiguration.captureOption';
  if (o.duration !== undefined) {
    const ms = parseDurationMs(o.duration);
    if (ms === undefined) errors.push(`${of}.duration: ${JSON.stringify(o.duration)} is not a duration (Go syntax: 30s, 1m, 1h30m)`);
    else if (ms < 1000) errors.push(`${of}.duration: ${JSON.stringify(o.duration)}; at least 1s`);
  }
  checkBpf(`${of}.pcapFilter`, o.pcapFilter, errors);
  if (o.packetSize !== undefined && (!Number.isInteger(o.packetSize) || o.packetSize < 0 || o.packetSize > 262144)) errors.push(`${of}.packetSize: ${o.packetSize}; an integer from 0 to 262144`);
  if (o.maxCaptureSize !== undefined && (!Number.isInteger(o.maxCaptureSize) || o.maxCaptureSize < 1)) errors.push(`${of}.maxCaptureSize: ${o.maxCaptureSize}; an integer number of MB, at least 1`);
  if (o.fileCount !== undefined && (!Number.isInteger(o.fileCount) || o.fileCount < 0)) errors.push(`${of}.fileCount: ${o.fileCount}; an integer, at least 0`);
  for (const which of ['sourceIPs', 'destinationIPs'] as const) {
    const ips = o[which] ?? [];
    if (ips.length > MAX_IPS) errors.push(`${of}.${which}: ${ips.length} addresses; at most ${MAX_IPS}`);
    for (const [i, ip] of ips.entries()) if (!isIP(ip)) errors.push(`${of}.${which}[${i}]: ${JSON.stringify(ip)} is not an IPv4 or IPv6 address`);
  }
  for (const [i, n] of (o.interfaces ?? []).entries()) if (!/^[A-Za-z0-9_.:@-]{1,64}$/.test(n) || n.startsWith('-')) errors.push(`${of}.interfaces[${i}]: ${JSON.stringify(n)} is not an interface name`);
  const enums: [keyof typeof o, readonly string[]][] = [
    ['verbosity', ['', 'verbose', 'extra', 'max']],
    ['printDataFormat', ['', 'hex', 'hex-with-link', 'ascii', 'ascii-with-link']],
    ['timestampFormat', ['', 'none', 'unformatted', 'delta', 'date', 'delta-since-first']],
  ];
  for (const [k, allowed] of enums) {
    const v = o[k];
    if (v !== undefined && !allowed.includes(v as string)) errors.push(`${of}.${k}: ${JSON.stringify(v)}; allowed: ${allowed.map((x) => x || '""').join(', ')}`);
  }
  if (cc.trigger !== undefined) {
    errors.push(...validateTrigger(cc.trigger));
    // A triggered capture streams one tcpdump into its pre-trigger ring and writes one file.
    if ((o.interfaces ?? []).length > 1) errors.push(`${of}.interfaces: a triggered capture (trigger) captures on one interface or all (none named), not ${o.interfaces?.length}`);
    if (o.fileCount !== undefined && o.fileCount > 0) errors.push(`${of}.fileCount: a triggered capture (trigger) writes one file; leave fileCount out`);
  }
  const out = spec.outputConfiguration;
  if (!out || typeof out !== 'object') errors.push('spec.outputConfiguration: required');
  else {
    if (out.hostPath !== undefined) {
      try {
        resolveHostPath('/base', out.hostPath);
      } catch {
        errors.push(`spec.outputConfiguration.hostPath: ${JSON.stringify(out.hostPath)} must be a relative path under the operator's base directory, without ..`);
      }
    }
    if (out.s3Upload && !out.s3Upload.bucket) errors.push('spec.outputConfiguration.s3Upload.bucket: required');
    if (!out.hostPath && !out.persistentVolumeClaim && !out.blobUpload && !out.s3Upload) errors.push('spec.outputConfiguration: set at least one of hostPath, persistentVolumeClaim, blobUpload, s3Upload');
  }
  return errors;
}

/** The capture duration in ms (default 1m); the spec must be valid. */
export function captureDurationMs(spec: CaptureSpec): number {
  const d = spec.captureConfiguration.captureOption?.duration;
  return d === undefined ? DEFAULT_DURATION_MS : (parseDurationMs(d) ?? DEFAULT_DURATION_MS);
}

/**
 * How long a node's capture may run: the duration, and for a triggered capture (armed for the
 * duration) its post-trigger window after it. The spec must be valid.
 */
export function captureRunMs(spec: CaptureSpec): number {
  const t = spec.captureConfiguration.trigger;
  return captureDurationMs(spec) + (t ? resolveTrigger(t).postTriggerMs : 0);
}

/** tcpdump flags from the capture options, in Retina's order. */
export function tcpdumpFlags(spec: CaptureSpec): string[] {
  const o = spec.captureConfiguration.captureOption ?? {};
  const f: string[] = [];
  if (o.noPromiscuous) f.push('-p');
  if (o.packetBuffered) f.push('-U');
  if (o.immediateMode) f.push('--immediate-mode');
  if (o.noResolvePort) f.push('-nn');
  else if (o.noResolveDNS) f.push('-n');
  if (o.verbosity === 'verbose') f.push('-v');
  if (o.verbosity === 'extra') f.push('-vv');
  if (o.verbosity === 'max') f.push('-vvv');
  const data: Record<string, string> = { hex: '-x', 'hex-with-link': '-xx', ascii: '-X', 'ascii-with-link': '-XX' };
  if (o.printDataFormat && data[o.printDataFormat]) f.push(data[o.printDataFormat] as string);
  if (o.printLinkHeader) f.push('-e');
  if (o.quietOutput) f.push('-q');
  if (o.absoluteSeq) f.push('-S');
  const ts: Record<string, string> = { none: '-t', unformatted: '-tt', delta: '-ttt', date: '-tttt', 'delta-since-first': '-ttttt' };
  if (o.timestampFormat && ts[o.timestampFormat]) f.push(ts[o.timestampFormat] as string);
  if (o.dontVerifyChecksum) f.push('-K');
  return f;
}
