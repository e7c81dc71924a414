/**
 * MetricsConfiguration validation and the "one active at a time" rule. Every CR gets status.state:
 * Accepted (the active one), or Errored with a reason (invalid, or another one is already active).
 * The active one stays active while it remains valid; otherwise the oldest valid CR takes over.
 */
import {
  objectPath, resources,
  type EventRecorder, type InformerFactory, type MetricsConfiguration, type MetricsConfigurationSpec, type MetricsConfigurationState, type RestClient,
} from '../k8s/index.js';
import { parseDurationMs } from '../config/index.js';
import type { Logger } from '../log/index.js';
import type { MetricWriters } from '../metrics/index.js';
import { createController, type Controller } from './controller.js';
import { apiWrites } from './metrics.js';
import { canonical } from './retina-endpoint-controller.js';

/** Retina's advanced metric names (utils.IsAdvancedMetric). */
export const ADVANCED_METRICS: readonly string[] = [
  'drop_count', 'drop_bytes', 'forward_count', 'forward_bytes', 'node_connectivity_status', 'node_connectivity_latency_seconds',
  'tcp_state', 'tcp_connection_remote', 'tcp_connection_stats', 'tcp_flag_gauges', 'tcp_retransmission_count', 'ip_connection_stats',
  'udp_connection_stats', 'dns_request_count', 'dns_response_count', 'node_apiserver_latency', 'node_apiserver_handshake_latency',
  'node_apiserver_no_response',
];
/** Context-label options (case-insensitive), and the additional labels that have an effect. */
export const CONTEXT_LABELS: readonly string[] = ['ip', 'namespace', 'podname', 'workload', 'service', 'port', 'zone'];
export const ADDITIONAL_LABELS: readonly string[] = ['is_reply'];

/** Every problem with a spec, as sentences; empty means valid. */
export function validateMetricsConfiguration(spec: Partial<MetricsConfigurationSpec> | undefined): string[] {
  const errs: string[] = [];
  if (!spec || typeof spec !== 'object') return ['spec is missing'];
  const opts = spec.contextOptions;
  if (!Array.isArray(opts) || opts.length === 0) errs.push('spec.contextOptions must list at least one metric');
  const seen = new Set<string>();
  for (const [i, c] of (Array.isArray(opts) ? opts : []).entries()) {
    const at = `spec.contextOptions[${i}]`;
    if (!c || typeof c.metricName !== 'string' || !ADVANCED_METRICS.includes(c.metricName)) {
      errs.push(`${at}.metricName ${JSON.stringify(c?.metricName)} is not an advanced metric (one of ${ADVANCED_METRICS.join(', ')})`);
      continue;
    }
    if (seen.has(c.metricName)) errs.push(`${at}.metricName ${c.metricName} is listed twice`);
    seen.add(c.metricName);
    for (const side of ['sourceLabels', 'destinationLabels'] as const) {
      for (const l of c[side] ?? []) if (!CONTEXT_LABELS.includes(String(l).toLowerCase())) errs.push(`${at}.${side}: unknown label ${JSON.stringify(l)} (one of ${CONTEXT_LABELS.join(', ')})`);
    }
    for (const l of c.additionalLabels ?? []) if (!ADDITIONAL_LABELS.includes(String(l).toLowerCase())) errs.push(`${at}.additionalLabels: unknown label ${JSON.stringify(l)} (only is_reply)`);
    if (c.ttl !== undefined && c.ttl !== '' && parseDurationMs(c.ttl) === undefined) errs.push(`${at}.ttl ${JSON.stringify(c.ttl)} is not a duration such as 5m`);
  }
  const ns = spec.namespaces;
  const hasInc = Array.isArray(ns?.include);
  const hasExc = Array.isArray(ns?.exclude);
  if (hasInc === hasExc) errs.push('spec.namespaces must set exactly one of include and exclude');
  return errs;
}

interface SlimMc {
  readonly name: string;
  readonly uid: string;
  readonly created: string;
  readonly generation: number;
  readonly spec: MetricsConfigurationSpec;
  readonly state: MetricsConfigurationState | undefined;
  readonly reason: string | undefined;
  readonly lastKnownSpec: MetricsConfigurationSpec | undefined;
}

export interface MetricsConfigurationControllerOptions {
  readonly client: RestClient;
  readonly informers: InformerFactory;
  readonly metrics: MetricWriters;
  readonly events: EventRecorder;
  readonly log: Logger;
}

export interface MetricsConfigurationController extends Controller {
  enqueueAll(): void;
}

const ALL = 'all';

export function createMetricsConfigurationController(o: MetricsConfigurationControllerOptions): MetricsConfigurationController {
  const log = o.log.child({ controller: 'metricsconfiguration' });
  const writes = o.metrics.counter(apiWrites);
  const mcs = o.informers.informer<MetricsConfiguration, SlimMc>({
    resource: resources.metricsConfigurations,
    transform: (m) => ({
      name: m.metadata.name, uid: m.metadata.uid ?? '', created: m.metadata.creationTimestamp ?? '', generation: m.metadata.generation ?? 0,
      spec: m.spec, state: m.status?.state, reason: m.status?.reason, lastKnownSpec: m.status?.lastKnownSpec,
    }),
  });

  async function reconcile(_key: string, signal: AbortSignal): Promise<'success'> {
    const all = mcs.list().sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.name < b.name ? -1 : 1));
    const problems = new Map(all.map((m) => [m.name, validateMetricsConfiguration(m.spec)]));
    const valid = all.filter((m) => problems.get(m.name)?.length === 0);
    const active = valid.find((m) => m.state === 'Accepted') ?? valid[0];
    let failed: Error | undefined;
    for (const m of all) {
      const errs = problems.get(m.name) ?? [];
      const state: MetricsConfigurationState = errs.length ? 'Errored' : m === active ? 'Accepted' : 'Errored';
      const reason = errs.length ? errs.join('; ') : m === active ? '' : `MetricsConfiguration ${active?.name} is already active; only one is honoured`;
      const lastKnownSpec = state === 'Accepted' ? m.spec : m.lastKnownSpec;
      if (m.state === state && (m.reason ?? '') === reason && canonical(m.lastKnownSpec) === canonical(lastKnownSpec)) continue;
      try {
        await o.client.request('PATCH', objectPath(resources.metricsConfigurations, undefined, m.name, 'status'), {
          signal,
          contentType: 'application/merge-patch+json',
          body: { status: { state, reason, lastKnownSpec: lastKnownSpec ?? null, observedGeneration: m.generation } },
        });
        writes.inc({ resource: 'metricsconfigurations', verb: 'patch-status' });
        const target = { resource: resources.metricsConfigurations, name: m.name, uid: m.uid };
        if (state === 'Accepted') o.events.normal(target, 'Accepted', 'MetricsConfiguration is valid and active');
        else o.events.warning(target, 'Errored', reason);
        log.info('MetricsConfiguration status', { name: m.name, state, reason });
      } catch (e) {
        failed ??= e as Error;
      }
    }
    if (failed) throw failed;
    return 'success';
  }

  const controller = createController({ name: 'metricsconfiguration', reconcile, workers: 1, qps: 10, burst: 20, metrics: o.metrics, log });
  const enqueue = (): void => controller.queue.add(ALL);
  mcs.subscribe({ added: enqueue, updated: enqueue, deleted: enqueue, synced: enqueue });
  return { ...controller, enqueueAll: enqueue };
}
