/**
 * MetricsConfiguration status and the "one active at a time" rule. Every CR gets status.state:
 * Accepted (the active one; its reason lists what of the spec is ignored, if anything), or Errored
 * with a reason (invalid, or another one is already active). The active one stays active while it
 * remains valid; otherwise the oldest valid CR takes over. Validation is the agent's own
 * (`validateMetricsSpec`, src/metrics/spec.ts), so what is Accepted here is what agents apply.
 */
import {
  objectPath, resources,
  type EventRecorder, type InformerFactory, type MetricsConfiguration, type MetricsConfigurationSpec, type MetricsConfigurationState, type RestClient,
} from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { MetricWriters } from '../metrics/index.js';
import { describeIssues, validateMetricsSpec, type SpecCheck } from '../metrics/index.js';
import { createController, type Controller } from './controller.js';
import { apiWrites } from './metrics.js';
import { canonical } from './retina-endpoint-controller.js';

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
    const checks = new Map<string, SpecCheck>(all.map((m) => [m.name, validateMetricsSpec(m.spec)]));
    const valid = all.filter((m) => checks.get(m.name)?.errors.length === 0);
    const active = valid.find((m) => m.state === 'Accepted') ?? valid[0];
    let failed: Error | undefined;
    for (const m of all) {
      const check = checks.get(m.name) as SpecCheck;
      const state: MetricsConfigurationState = check.errors.length || m !== active ? 'Errored' : 'Accepted';
      const reason = check.errors.length ? describeIssues(check.errors)
        : m !== active ? `MetricsConfiguration ${active?.name} is already active; only one is honoured`
          : check.warnings.length ? `accepted; ignored: ${describeIssues(check.warnings)}` : '';
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
        if (state === 'Accepted' && check.warnings.length) o.events.warning(target, 'AcceptedWithWarnings', reason);
        else if (state === 'Accepted') o.events.normal(target, 'Accepted', 'MetricsConfiguration is valid and active');
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
