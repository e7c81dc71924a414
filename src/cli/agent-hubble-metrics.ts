/**
 * Cilium's hubble_* metrics, wired by agent.ts when hubble.metrics.enabled names any: their own
 * registry (no process metrics: those are on /metrics of apiServer.port), served on
 * hubble.metrics.listenAddress (Cilium's hubble-metrics-server, `:9965`), and the consumer the flow
 * pipeline feeds. Entries that cannot run were refused by the config (src/config/hubble-metrics.ts):
 * each is logged here with its reason, and the others run.
 */
import { podLabelName, type AgentConfig } from '../config/index.js';
import { errorFields, type Logger } from '../log/index.js';
import { catalog, createMetricsRegistry, type MetricsRegistry } from '../metrics/index.js';
import { createHubbleMetrics, type HubbleMetrics } from '../metrics/hubble/index.js';
import { startHttpServer, type HttpServer } from '../server/index.js';

export interface HubbleMetricsService extends AsyncDisposable {
  readonly metrics: HubbleMetrics;
  readonly server: HttpServer;
}

/** Logs refused entries; undefined when none runs, or when the server cannot listen (logged). */
export async function startHubbleMetrics(o: { agent: AgentConfig; metrics: MetricsRegistry; log: Logger; nodeName: string | undefined }): Promise<HubbleMetricsService | undefined> {
  const log = o.log.child({ component: 'hubble-metrics' });
  const cfg = o.agent.hubbleMetrics;
  for (const r of cfg.refused) log.error('hubble.metrics.enabled entry refused; the other entries run', { entry: r.entry, reason: r.reason });
  if (!cfg.metrics.length) return undefined;
  const registry = createMetricsRegistry({ processMetrics: false });
  const overflow = o.metrics.counter(catalog.metricsModuleSeriesOverflow);
  const hm = createHubbleMetrics({
    metrics: cfg.metrics, registry, ...(o.nodeName ? { nodeName: o.nodeName } : {}),
    podLabels: o.agent.metricsPodLabels.map((key) => ({ key, name: podLabelName(key) })),
    onOverflow: (family, n) => overflow.inc({ metric: family }, n),
  });
  let server: HttpServer;
  try {
    server = await startHttpServer({
      host: cfg.listen.host, port: cfg.listen.port, log, expose: () => registry.exposeBody(),
      readiness: { ready: () => true, status: () => [] },
    });
  } catch (e) {
    hm[Symbol.dispose]();
    log.error('cannot serve hubble metrics; they are off', { error: errorFields(e as Error), listenAddress: `${cfg.listen.host}:${cfg.listen.port}` });
    return undefined;
  }
  log.info('serving hubble metrics', { address: `${server.address.address}:${server.address.port}`, metrics: cfg.metrics.map((m) => m.entry), families: hm.families().map((f) => f.name) });
  return {
    metrics: hm,
    server,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]();
      hm[Symbol.dispose]();
    },
  };
}
