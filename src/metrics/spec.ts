/**
 * The MetricsConfiguration spec (retina.sh/v1alpha1), validated once, by the one validator the
 * operator (status) and the agent (what it applies) both call. It accepts what Retina's validator
 * accepts (`crd/api/v1alpha1/validations/validate_metricconfiguration.go`: non-empty contextOptions,
 * names from `utils.IsAdvancedMetric`, a Go duration ttl >= 0, exactly one of namespaces.include and
 * namespaces.exclude) and rejects what it rejects; the parts Retina silently ignores (unknown context
 * labels, additional labels other than `is_reply`, names that make no metric, an entry listed twice)
 * are accepted and come back as warnings. Every error and warning names its field
 * (`spec.contextOptions[0].sourceLabels[1]`).
 */
import { didYouMean, parseDurationMs } from '../config/index.js';
import { advancedFamilies, advancedMetricNames, contextLabelOptions, isReplyLabel, type ContextLabelOption } from './catalog.js';

export type ContextLabel = ContextLabelOption;

export interface ContextOption {
  readonly metricName: string;
  readonly sourceLabels: readonly ContextLabel[];
  readonly destinationLabels: readonly ContextLabel[];
  /** `is_reply` or nothing: the only additional label with an effect (forward metrics), as in Retina. */
  readonly additionalLabels: readonly string[];
  /** 0: series never expire. */
  readonly ttlMs: number;
}

export type NamespaceFilter = { readonly include: readonly string[] } | { readonly exclude: readonly string[] };

export interface MetricsSpec {
  readonly contextOptions: readonly ContextOption[];
  /** Always set by the validator; undefined (all namespaces) only in specs built by code. */
  readonly namespaces: NamespaceFilter | undefined;
}

/** One problem (error) or ignored part (warning) of a spec, naming the field. */
export interface SpecIssue {
  readonly field: string;
  readonly problem: string;
}

export interface SpecCheck {
  /** The normalised spec: undefined when there is an error. */
  readonly spec: MetricsSpec | undefined;
  readonly errors: readonly SpecIssue[];
  readonly warnings: readonly SpecIssue[];
}

/** `field: problem; field: problem`, for a status reason or a log line. */
export function describeIssues(issues: readonly SpecIssue[]): string {
  return issues.map((i) => `${i.field}: ${i.problem}`).join('; ');
}

/**
 * Retina's default set for annotation mode (`pkg/module/metrics/types.go` `DefaultMetrics`): these 11
 * names, the three `node_apiserver_*` included, each with `DefaultCtxOptions` on both sides.
 */
export const ANNOTATION_METRICS = Object.freeze([
  'forward_count', 'forward_bytes', 'drop_count', 'drop_bytes', 'tcp_flag_gauges', 'tcp_retransmission_count',
  'node_apiserver_latency', 'node_apiserver_handshake_latency', 'node_apiserver_no_response', 'dns_request_count', 'dns_response_count',
] as const);
/** Retina's `DefaultCtxOptions` (service and port left out there: no logic / too many series). */
export const ANNOTATION_CONTEXT: readonly ContextLabel[] = Object.freeze(['ip', 'namespace', 'podname', 'workload']);

/** Annotation mode's fixed spec for these namespaces. */
export function annotationSpec(namespaces: readonly string[]): MetricsSpec {
  return {
    contextOptions: ANNOTATION_METRICS.map((metricName) => ({ metricName, sourceLabels: ANNOTATION_CONTEXT, destinationLabels: ANNOTATION_CONTEXT, additionalLabels: [], ttlMs: 0 })),
    namespaces: { include: namespaces },
  };
}

export function sameSpec(a: MetricsSpec | undefined, b: MetricsSpec | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const NAMES: readonly string[] = advancedMetricNames;
const LABELS: readonly string[] = contextLabelOptions;
const FORWARD = new Set(['forward_count', 'forward_bytes']);
/** Families whose fixed labels already include `direction` (a Retina doc example asks for it as an additional label). */
const DIRECTIONAL = new Set(['forward_count', 'forward_bytes', 'drop_count', 'drop_bytes', 'tcp_retransmission_count']);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export function validateMetricsSpec(raw: unknown): SpecCheck {
  const errors: SpecIssue[] = [];
  const warnings: SpecIssue[] = [];
  const err = (field: string, problem: string): void => void errors.push({ field, problem });
  const warn = (field: string, problem: string): void => void warnings.push({ field, problem });
  if (!isObject(raw)) {
    err('spec', 'must be an object with contextOptions and namespaces');
    return { spec: undefined, errors, warnings };
  }
  const opts = raw['contextOptions'];
  if (!Array.isArray(opts) || opts.length === 0) err('spec.contextOptions', 'must list at least one metric');
  const list = Array.isArray(opts) ? (opts as unknown[]) : [];
  // Retina keeps one metric object per name (the last entry wins); so do we, and say so.
  const lastIndex = new Map<string, number>();
  list.forEach((o, i) => isObject(o) && typeof o['metricName'] === 'string' && lastIndex.set(o['metricName'], i));
  const contextOptions: ContextOption[] = [];
  list.forEach((o, i) => {
    const f = `spec.contextOptions[${i}]`;
    if (!isObject(o)) return err(f, 'must be an object with a metricName');
    const name = o['metricName'];
    if (typeof name !== 'string' || !NAMES.includes(name)) {
      return err(`${f}.metricName`, `${JSON.stringify(name)} is not an advanced metric${typeof name === 'string' ? didYouMean(name, NAMES) : ''}; one of ${NAMES.join(', ')}`);
    }
    const ttlMs = ttl(o['ttl'], `${f}.ttl`, err);
    const sourceLabels = contextLabels(o['sourceLabels'], `${f}.sourceLabels`, err, warn);
    const destinationLabels = contextLabels(o['destinationLabels'], `${f}.destinationLabels`, err, warn);
    const additionalLabels = extraLabels(name, o['additionalLabels'], `${f}.additionalLabels`, err, warn);
    const last = lastIndex.get(name) as number;
    if (last !== i) return warn(`${f}.metricName`, `${name} is listed again at spec.contextOptions[${last}]; as in Retina the last entry is used and this one is ignored`);
    if (advancedFamilies[name as keyof typeof advancedFamilies].length === 0) warn(`${f}.metricName`, `${name} is accepted (as by Retina) but no advanced metric is made from it`);
    if (ttlMs !== undefined) contextOptions.push({ metricName: name, sourceLabels, destinationLabels, additionalLabels, ttlMs });
  });
  const namespaces = namespaceFilter(raw['namespaces'], err);
  return { spec: errors.length ? undefined : { contextOptions, namespaces }, errors, warnings };
}

type Report = (field: string, problem: string) => void;

function ttl(v: unknown, field: string, err: Report): number | undefined {
  if (v === undefined || v === null || v === '') return 0;
  const ms = typeof v === 'string' ? parseDurationMs(v) : undefined;
  if (ms === undefined) err(field, `${JSON.stringify(v)} is not a duration >= 0 such as 24h, 5m or 30s`);
  return ms;
}

function strings(v: unknown, field: string, err: Report): string[] {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  err(field, 'must be a list of strings');
  return [];
}

/** Case-insensitive; an unknown label is ignored with a warning (Retina's NewCtxOption skips it silently). */
function contextLabels(v: unknown, field: string, err: Report, warn: Report): ContextLabel[] {
  const out: ContextLabel[] = [];
  strings(v, field, err).forEach((s, k) => {
    const l = s.toLowerCase();
    if (LABELS.includes(l)) {
      if (!out.includes(l as ContextLabel)) out.push(l as ContextLabel);
    } else warn(`${field}[${k}]`, `"${s}" is not a context label and is ignored, as Retina does${didYouMean(s, LABELS)}; labels: ${LABELS.join(', ')}`);
  });
  return out;
}

/** Only `is_reply`, exactly, on forward metrics has an effect (Retina: `slices.Contains(..., utils.IsReply)` in forward.go). */
function extraLabels(metric: string, v: unknown, field: string, err: Report, warn: Report): string[] {
  let isReply = false;
  strings(v, field, err).forEach((s, k) => {
    const f = `${field}[${k}]`;
    if (s === isReplyLabel) {
      if (FORWARD.has(metric)) isReply = true;
      else warn(f, `is_reply labels only forward_count and forward_bytes; ignored for ${metric}`);
    } else if (s.toLowerCase() === 'direction' && DIRECTIONAL.has(metric)) {
      warn(f, `"${s}" has no effect: direction is always a label of ${metric}; only is_reply is an additional label`);
    } else {
      warn(f, `"${s}" has no effect and is ignored, as Retina does: only is_reply is an additional label${didYouMean(s, [isReplyLabel])}`);
    }
  });
  return isReply ? [isReplyLabel] : [];
}

function namespaceFilter(v: unknown, err: Report): NamespaceFilter | undefined {
  const n = isObject(v) ? v : {};
  if (v !== undefined && v !== null && !isObject(v)) err('spec.namespaces', 'must be an object with include or exclude');
  const hasInc = n['include'] !== undefined && n['include'] !== null;
  const hasExc = n['exclude'] !== undefined && n['exclude'] !== null;
  if (hasInc && hasExc) err('spec.namespaces', 'set include or exclude, not both (as Retina requires)');
  else if (!hasInc && !hasExc) err('spec.namespaces', 'set include or exclude (Retina rejects a spec with neither; exclude: [] means every namespace)');
  else if (hasInc) return { include: strings(n['include'], 'spec.namespaces.include', err) };
  else return { exclude: strings(n['exclude'], 'spec.namespaces.exclude', err) };
  return undefined;
}
