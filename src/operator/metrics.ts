/**
 * The operator's own metrics. Names follow controller-runtime's (workqueue_*, controller_runtime_*,
 * leader_election_master_status), which Retina's operator exported, so its dashboards carry over.
 * (They live here, not in src/metrics/catalog.ts, because only the operator writes them.)
 */
import { defineMetric as def, type MetricWriters } from '../metrics/index.js';
import type { WorkQueueMetrics } from '../k8s/index.js';

const LATENCY = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const workqueueDepth = def('workqueue_depth', 'gauge', 'Current depth of the work queue', ['name']);
export const workqueueAdds = def('workqueue_adds_total', 'counter', 'Keys added to the work queue', ['name']);
export const workqueueRetries = def('workqueue_retries_total', 'counter', 'Keys re-queued with backoff', ['name']);
export const workqueueQueueDuration = def('workqueue_queue_duration_seconds', 'histogram', 'Seconds a key waits in the queue', ['name'], LATENCY);
export const reconcileTotal = def('controller_runtime_reconcile_total', 'counter', 'Reconciles by controller and result (success, error, requeue)', ['controller', 'result']);
export const reconcileErrors = def('controller_runtime_reconcile_errors_total', 'counter', 'Reconcile errors by controller', ['controller']);
export const reconcileTime = def('controller_runtime_reconcile_time_seconds', 'histogram', 'Reconcile latency by controller', ['controller'], LATENCY);
export const apiWrites = def('retina_operator_api_writes_total', 'counter', 'Ours: writes to the API server by resource and verb', ['resource', 'verb']);
export const leaderStatus = def('leader_election_master_status', 'gauge', '1 while this replica leads', ['name']);
export const reflectorEvents = def('retina_operator_reflector_events_total', 'counter', 'Ours: reflector lists, relists, 410s, reconnects and watchdog restarts', ['resource', 'event']);
export const reflectorRejected = def('retina_operator_reflector_rejected_total', 'counter', 'Ours: objects the reflectors skipped (transform, malformed), and LIST pages or watch events over the size caps', ['resource', 'reason']);

export function queueMetrics(m: MetricWriters, name: string): WorkQueueMetrics {
  const depth = m.gauge(workqueueDepth);
  const adds = m.counter(workqueueAdds);
  const retries = m.counter(workqueueRetries);
  const lat = m.histogram(workqueueQueueDuration);
  depth.set({ name }, 0);
  return {
    depth: (n) => depth.set({ name }, n),
    added: () => adds.inc({ name }),
    retried: () => retries.inc({ name }),
    queueLatency: (s) => lat.observe({ name }, s),
  };
}
