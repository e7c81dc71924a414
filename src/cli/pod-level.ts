/**
 * The pod-level pipeline (enablePodLevel), wired by agent.ts: plugins' flow batches → enricher (IP →
 * pod, from the IP cache) → Metrics Module (adv_* families), plus the IPs of interest that
 * kernel-side filters mirror. With Kubernetes the spec comes from the Accepted MetricsConfiguration
 * or from annotations (pod-level-spec.ts) and the API server's addresses are tracked; without it
 * the pipeline runs but can neither enrich nor learn a spec, and says so once.
 */
import type { AgentConfig } from '../config/index.js';
import { cacheLookup, createEnricher, type EndpointLookup } from '../enricher/index.js';
import { fanOut, type FlowConsumer } from '../flow/index.js';
import { createInformerFactory, createInterestSet, startApiServerIps } from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import { catalog, type MetricsRegistry } from '../metrics/index.js';
import { createMetricsModule, type MetricsModule } from '../metrics/module/index.js';
import { everyIp, type IpInterest } from '../plugin/index.js';
import type { AgentKubernetes } from './agent-k8s.js';
import { within } from './command.js';
import { guarded } from './flow-stages.js';
import { startPodForgetter } from './pod-level-forget.js';
import { startSpecController, type SpecController } from './pod-level-spec.js';

export interface PodLevel extends AsyncDisposable {
  /** Where plugins hand their flows. */
  readonly flows: FlowConsumer;
  /** The IPs of interest for kernel-side filters. */
  readonly interest: IpInterest;
  readonly module: MetricsModule;
  readonly spec: SpecController | undefined;
}

const noLookup: EndpointLookup = { byIp: () => undefined };

/**
 * `also`: a stage that gets the enriched flows beside the Metrics Module (the Hubble ring), so
 * flows are enriched once for both.
 */
export async function startPodLevel(o: { agent: AgentConfig; metrics: MetricsRegistry; log: Logger; k8s: AgentKubernetes | undefined; also?: FlowConsumer | undefined }): Promise<PodLevel> {
  const log = o.log.child({ component: 'pod-level' });
  const { agent, metrics, k8s } = o;
  const after = (module: MetricsModule): FlowConsumer => {
    const m = guarded(module, 'pipeline', 'metrics_module', metrics, log);
    return o.also ? fanOut([m, guarded(o.also, 'pipeline', 'hubble', metrics, log)]) : m;
  };
  if (!k8s) {
    const module = createMetricsModule({ metrics, remoteContext: agent.remoteContext });
    log.warn('enablePodLevel without Kubernetes: flows cannot be enriched (no IP cache) and no MetricsConfiguration can be read, so no advanced (adv_*) metrics are produced');
    const flows = guarded(createEnricher(noLookup, after(module)), 'pipeline', 'enricher', metrics, log);
    return {
      flows, interest: everyIp, module, spec: undefined,
      [Symbol.asyncDispose]: async () => module[Symbol.dispose](),
    };
  }

  const apiServer = startApiServerIps({ client: k8s.client, log });
  const interest = createInterestSet({ cache: k8s.cache, bypass: agent.bypassLookupIPOfInterest });
  const apiSub = apiServer.onChange((ips) => interest.setApiServerIps(ips));
  const interestLog = interest.onChange(() => log.debug('IPs of interest changed', { count: interest.ips().size, selection: interest.selection().kind }));
  const module = createMetricsModule({ metrics, remoteContext: agent.remoteContext, isApiServer: (ip) => apiServer.has(ip), ...(k8s.nodeName ? { nodeName: k8s.nodeName } : {}) });
  const events = metrics.counter(catalog.k8sWatchEvents);
  const rejected = metrics.counter(catalog.k8sObjectsRejected);
  const factory = createInformerFactory({
    client: k8s.client, log, initialState: 'stream',
    onEvent: (event, resource) => events.inc({ resource, event }), onRejected: (reason, resource) => rejected.inc({ resource, reason }),
  });
  const spec = startSpecController({
    annotations: agent.enableAnnotations, remoteContext: agent.remoteContext, factory, pods: k8s.watch.pods, cache: k8s.cache, module, interest, log,
  });
  const forgetter = startPodForgetter({ pods: k8s.watch.pods, cache: k8s.cache, module, log });
  factory.start();
  // Do not hold the plugins back for long: the set fills in when the addresses arrive.
  await within(apiServer.ready, 3000);
  interest.setApiServerIps(apiServer.ips());
  interest.flush();
  const flows = guarded(createEnricher(cacheLookup(k8s.cache), after(module)), 'pipeline', 'enricher', metrics, log);
  log.info('pod-level pipeline running', {
    context: agent.remoteContext ? 'remote' : 'local', mode: agent.enableAnnotations ? 'annotations' : 'MetricsConfiguration',
    bypassLookupIPOfInterest: agent.bypassLookupIPOfInterest, apiServer: [...apiServer.ips()],
  });
  return {
    flows,
    interest: {
      bypass: interest.bypass,
      ips: () => interest.ips(),
      onChange: (l) => interest.onChange(l),
    },
    module,
    spec,
    async [Symbol.asyncDispose]() {
      spec[Symbol.dispose]();
      forgetter[Symbol.dispose]();
      apiSub[Symbol.dispose]();
      interestLog[Symbol.dispose]();
      interest[Symbol.dispose]();
      await Promise.allSettled([factory[Symbol.asyncDispose](), apiServer[Symbol.asyncDispose]()]);
      module[Symbol.dispose]();
    },
  };
}
