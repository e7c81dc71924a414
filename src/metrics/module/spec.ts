/**
 * The MetricsConfiguration spec (retina.sh/v1alpha1), validated once: a bad field gets an error
 * naming it (`spec.contextOptions[1].metricName`). The operator's validator and the agent share it.
 */
import { parseDurationMs } from '../../config/index.js';

export const CONTEXT_LABELS = ['ip', 'namespace', 'podname', 'workload', 'service', 'port', 'zone'] as const;
export type ContextLabel = (typeof CONTEXT_LABELS)[number];

/** Retina's accepted metric names (utils.IsAdvancedMetric). */
export const ADVANCED_METRIC_NAMES = [
  'drop_count', 'drop_bytes', 'forward_count', 'forward_bytes', 'node_connectivity_status', 'node_connectivity_latency_seconds',
  'tcp_state', 'tcp_connection_remote', 'tcp_connection_stats', 'tcp_flag_gauges', 'tcp_retransmission_count',
  'ip_connection_stats', 'udp_connection_stats', 'dns_request_count', 'dns_response_count', 'node_apiserver_latency',
  'node_apiserver_handshake_latency', 'node_apiserver_no_response',
] as const;

export interface ContextOption {
  readonly metricName: string;
  readonly sourceLabels: readonly ContextLabel[];
  readonly destinationLabels: readonly ContextLabel[];
  /** Only `is_reply` has an effect (forward metrics), as in Retina. */
  readonly additionalLabels: readonly string[];
  /** 0: series never expire. */
  readonly ttlMs: number;
}

export type NamespaceFilter = { readonly include: readonly string[] } | { readonly exclude: readonly string[] };

export interface MetricsSpec {
  readonly contextOptions: readonly ContextOption[];
  readonly namespaces: NamespaceFilter | undefined;
}

export class SpecError extends Error {
  override readonly name = 'SpecError';
  constructor(readonly field: string, readonly problem: string) {
    super(`${field}: ${problem}`);
  }
}

function stringList(v: unknown, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new SpecError(field, 'must be a list of strings');
  return v as string[];
}

/** Context labels are case-insensitive in the CR; unknown ones are an error here (Retina ignored them silently). */
function labels(v: unknown, field: string): ContextLabel[] {
  return stringList(v, field).map((s, i) => {
    const l = s.toLowerCase() as ContextLabel;
    if (!CONTEXT_LABELS.includes(l)) throw new SpecError(`${field}[${i}]`, `"${s}" is not one of ${CONTEXT_LABELS.join(', ')}`);
    return l;
  });
}

export function parseMetricsSpec(raw: unknown): MetricsSpec {
  if (raw === null || typeof raw !== 'object') throw new SpecError('spec', 'must be an object');
  const r = raw as Record<string, unknown>;
  if (!Array.isArray(r['contextOptions']) || r['contextOptions'].length === 0) throw new SpecError('spec.contextOptions', 'must be a non-empty list');
  const seen = new Set<string>();
  const contextOptions = (r['contextOptions'] as unknown[]).map((o, i): ContextOption => {
    const f = `spec.contextOptions[${i}]`;
    if (o === null || typeof o !== 'object') throw new SpecError(f, 'must be an object');
    const c = o as Record<string, unknown>;
    const metricName = c['metricName'];
    if (typeof metricName !== 'string' || !(ADVANCED_METRIC_NAMES as readonly string[]).includes(metricName)) {
      throw new SpecError(`${f}.metricName`, `${JSON.stringify(metricName)} is not one of ${ADVANCED_METRIC_NAMES.join(', ')}`);
    }
    if (seen.has(metricName)) throw new SpecError(`${f}.metricName`, `${metricName} is configured twice`);
    seen.add(metricName);
    let ttlMs = 0;
    if (c['ttl'] !== undefined && c['ttl'] !== null && c['ttl'] !== '') {
      const t = typeof c['ttl'] === 'string' ? parseDurationMs(c['ttl']) : undefined;
      if (t === undefined) throw new SpecError(`${f}.ttl`, `${JSON.stringify(c['ttl'])} is not a duration such as 5m or 30s`);
      ttlMs = t;
    }
    return {
      metricName,
      sourceLabels: labels(c['sourceLabels'], `${f}.sourceLabels`),
      destinationLabels: labels(c['destinationLabels'], `${f}.destinationLabels`),
      additionalLabels: stringList(c['additionalLabels'], `${f}.additionalLabels`),
      ttlMs,
    };
  });
  let namespaces: NamespaceFilter | undefined;
  const ns = r['namespaces'];
  if (ns !== undefined && ns !== null) {
    if (typeof ns !== 'object') throw new SpecError('spec.namespaces', 'must be an object with include or exclude');
    const n = ns as Record<string, unknown>;
    const inc = n['include'] !== undefined && n['include'] !== null;
    const exc = n['exclude'] !== undefined && n['exclude'] !== null;
    if (inc && exc) throw new SpecError('spec.namespaces', 'set include or exclude, not both');
    if (inc) namespaces = { include: stringList(n['include'], 'spec.namespaces.include') };
    else if (exc) namespaces = { exclude: stringList(n['exclude'], 'spec.namespaces.exclude') };
  }
  return { contextOptions, namespaces };
}

/** Annotation mode's fixed spec (Retina's DefaultMetrics/DefaultCtxOptions). */
export function annotationSpec(namespaces: readonly string[]): MetricsSpec {
  const ctx: ContextLabel[] = ['ip', 'namespace', 'podname', 'workload'];
  const names = ['forward_count', 'forward_bytes', 'drop_count', 'drop_bytes', 'tcp_flag_gauges', 'tcp_retransmission_count', 'dns_request_count', 'dns_response_count'];
  return {
    contextOptions: names.map((metricName) => ({ metricName, sourceLabels: ctx, destinationLabels: ctx, additionalLabels: [], ttlMs: 0 })),
    namespaces: { include: namespaces },
  };
}

export function sameSpec(a: MetricsSpec | undefined, b: MetricsSpec | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
