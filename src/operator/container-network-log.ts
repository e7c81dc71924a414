/**
 * ContainerNetworkLog status. Each resource is validated on its own (several combine as a union, so
 * none excludes another) with the agents' own check (`validateContainerNetworkLogSpec`,
 * src/k8s/crd), and gets, as ACNS writes it, status.state CONFIGURED or FAILED with status.timestamp,
 * plus status.message (every problem, each naming its field path), observedGeneration and an
 * `Accepted` condition (reason Valid or Invalid) for tools that read conditions. A Warning event
 * carries the message of a FAILED one.
 */
import {
  objectPath, resources, validateContainerNetworkLogSpec,
  type ContainerNetworkLog, type ContainerNetworkLogCondition, type ContainerNetworkLogState, type EventRecorder, type InformerFactory, type RestClient,
} from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { MetricWriters } from '../metrics/index.js';
import { createController, type Controller } from './controller.js';
import { apiWrites } from './metrics.js';

interface SlimCnl {
  readonly name: string;
  readonly uid: string;
  readonly generation: number;
  readonly spec: unknown;
  readonly state: ContainerNetworkLogState | undefined;
  readonly message: string | undefined;
  readonly observedGeneration: number | undefined;
  readonly accepted: ContainerNetworkLogCondition | undefined;
}

export interface ContainerNetworkLogControllerOptions {
  readonly client: RestClient;
  readonly informers: InformerFactory;
  readonly metrics: MetricWriters;
  readonly events: EventRecorder;
  readonly log: Logger;
  readonly now?: () => Date;
}

export interface ContainerNetworkLogController extends Controller {
  enqueueAll(): void;
}

/** The status message: every problem on its own line part, bounded by the CRD's maxLength. */
export function describeProblems(problems: readonly string[]): string {
  const s = problems.join('; ');
  return s.length <= 4096 ? s : `${s.slice(0, 4093)}...`;
}

export function createContainerNetworkLogController(o: ContainerNetworkLogControllerOptions): ContainerNetworkLogController {
  const log = o.log.child({ controller: 'containernetworklog' });
  const writes = o.metrics.counter(apiWrites);
  const now = o.now ?? ((): Date => new Date());
  const cnls = o.informers.informer<ContainerNetworkLog, SlimCnl>({
    resource: resources.containerNetworkLogs,
    transform: (c) => ({
      name: c.metadata.name, uid: c.metadata.uid ?? '', generation: c.metadata.generation ?? 0, spec: c.spec,
      state: c.status?.state, message: c.status?.message, observedGeneration: c.status?.observedGeneration,
      accepted: c.status?.conditions?.find((x) => x.type === 'Accepted'),
    }),
  });

  async function reconcile(key: string, signal: AbortSignal): Promise<'success'> {
    const c = cnls.get(key);
    if (c === undefined) return 'success';
    const problems = validateContainerNetworkLogSpec(c.spec);
    const state: ContainerNetworkLogState = problems.length ? 'FAILED' : 'CONFIGURED';
    const message = describeProblems(problems);
    if (c.state === state && (c.message ?? '') === message && c.observedGeneration === c.generation && c.accepted?.observedGeneration === c.generation) return 'success';
    const ts = now().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const status = problems.length ? 'False' : 'True';
    const condition: ContainerNetworkLogCondition = {
      type: 'Accepted', status, reason: problems.length ? 'Invalid' : 'Valid',
      message: problems.length ? message : 'the include filters are valid; agents with flow logs enabled write the flows they select',
      observedGeneration: c.generation,
      lastTransitionTime: c.accepted?.status === status && c.accepted.lastTransitionTime ? c.accepted.lastTransitionTime : ts,
    };
    await o.client.request('PATCH', objectPath(resources.containerNetworkLogs, undefined, c.name, 'status'), {
      signal,
      contentType: 'application/merge-patch+json',
      body: { status: { state, timestamp: ts, message, observedGeneration: c.generation, conditions: [condition] } },
    });
    writes.inc({ resource: 'containernetworklogs', verb: 'patch-status' });
    const target = { resource: resources.containerNetworkLogs, name: c.name, uid: c.uid };
    if (state !== c.state) {
      if (problems.length) o.events.warning(target, 'Invalid', message);
      else o.events.normal(target, 'Configured', 'ContainerNetworkLog is valid');
    }
    log.info('ContainerNetworkLog status', { name: c.name, state, ...(problems.length ? { message } : {}) });
    return 'success';
  }

  const controller = createController({ name: 'containernetworklog', reconcile, workers: 1, qps: 10, burst: 20, metrics: o.metrics, log });
  const enqueue = (key: string): void => controller.queue.add(key);
  const enqueueAll = (): void => cnls.keys().forEach(enqueue);
  cnls.subscribe({ added: enqueue, updated: enqueue, synced: enqueueAll });
  return { ...controller, enqueueAll };
}
