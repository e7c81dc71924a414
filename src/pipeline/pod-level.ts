/**
 * The pod-level part of the pipeline (enablePodLevel): the Metrics Module, and what drives it from
 * the API server: the spec (pod-level-spec.ts: the Accepted MetricsConfiguration, or annotations),
 * deleted pods' series (pod-level-forget.ts), the API server's addresses (node_apiserver_*), and
 * the IPs of interest that kernel-side filters mirror. Without Kubernetes the module runs with no
 * spec and says so once. Loaded only with enablePodLevel (node.ts imports it dynamically).
 */
import { podLabelName, type AgentConfig } from '../config/index.js';
import { createInterestSet, startApiServerIps } from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import { createMetricsModule, type MetricsModule } from '../metrics/module/index.js';
import { everyIp, type IpInterest } from '../plugin/index.js';
import { startPodForgetter } from './pod-level-forget.js';
import { startSpecController, type SpecController } from './pod-level-spec.js';
import type { NodeWatches } from './watches.js';

export interface PodLevel extends AsyncDisposable {
  readonly module: MetricsModule;
  /** The IPs of interest for kernel-side filters. */
  readonly interest: IpInterest;
  readonly spec: SpecController | undefined;
}

export async function startPodLevel(o: { agent: AgentConfig; metrics: MetricsRegistry; log: Logger; k8s: NodeWatches | undefined }): Promise<PodLevel> {
  const log = o.log.child({ component: 'pod-level' });
  const { agent, metrics, k8s } = o;
  const podLabels = agent.metricsPodLabels.map((key) => ({ key, name: podLabelName(key) }));
  if (!k8s) {
    const module = createMetricsModule({ metrics, remoteContext: agent.remoteContext, podLabels });
    log.warn('enablePodLevel without Kubernetes: flows cannot be enriched (no IP cache) and no MetricsConfiguration can be read, so no advanced (adv_*) metrics are produced');
    return { module, interest: everyIp, spec: undefined, [Symbol.asyncDispose]: async () => module[Symbol.dispose]() };
  }

  const apiServer = startApiServerIps({ client: k8s.client, log });
  const interest = createInterestSet({ cache: k8s.cache, bypass: agent.bypassLookupIPOfInterest });
  const apiSub = apiServer.onChange((ips) => interest.setApiServerIps(ips));
  const interestLog = interest.onChange(() => log.debug('IPs of interest changed', { count: interest.ips().size, selection: interest.selection().kind }));
  const module = createMetricsModule({ metrics, remoteContext: agent.remoteContext, podLabels, isApiServer: (ip) => apiServer.has(ip), ...(k8s.nodeName ? { nodeName: k8s.nodeName } : {}) });
  const spec = startSpecController({
    annotations: agent.enableAnnotations, remoteContext: agent.remoteContext, factory: k8s.factory, pods: k8s.watch.pods, cache: k8s.cache, module, interest, log,
  });
  const forgetter = startPodForgetter({ pods: k8s.watch.pods, cache: k8s.cache, module, log });
  k8s.factory.start();
  // Do not hold the plugins back for long: the set fills in when the addresses arrive.
  let wait: NodeJS.Timeout | undefined;
  await Promise.race([apiServer.ready, new Promise<void>((r) => void (wait = setTimeout(r, 3000)).unref())]);
  clearTimeout(wait);
  interest.setApiServerIps(apiServer.ips());
  interest.flush();
  log.info('pod-level pipeline running', {
    context: agent.remoteContext ? 'remote' : 'local', mode: agent.enableAnnotations ? 'annotations' : 'MetricsConfiguration',
    bypassLookupIPOfInterest: agent.bypassLookupIPOfInterest, apiServer: [...apiServer.ips()],
  });
  return {
    module,
    interest: {
      bypass: interest.bypass,
      ips: () => interest.ips(),
      onChange: (l) => interest.onChange(l),
    },
    spec,
    async [Symbol.asyncDispose]() {
      spec[Symbol.dispose]();
      forgetter[Symbol.dispose]();
      apiSub[Symbol.dispose]();
      interestLog[Symbol.dispose]();
      interest[Symbol.dispose]();
      await apiServer[Symbol.asyncDispose]();
      module[Symbol.dispose]();
    },
  };
}
