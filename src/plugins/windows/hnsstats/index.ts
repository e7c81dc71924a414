/**
 * hnsstats: per-endpoint packet, byte and drop counters from HNS and the VFP port counters from
 * vfpctrl, published as node series summed over every attached endpoint, every
 * metricsIntervalDuration, and per-endpoint flows for the pod level. See README.md.
 */
import { openHcn, openHns, runVfpctrl, runVfpctrlList } from '../../../ffi/windows/index.js';
import { catalog, replaceSeries } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, errMessage, poll, type PluginDefinition } from '../../../plugin/index.js';
import { OwnedSeries } from '../owned-series.js';
import { readHns, type HnsSources } from './collect.js';
import { EndpointFlows } from './endpoint-flows.js';
import { nodeRows } from './node-sums.js';

export const EMITS = [catalog.forwardCount, catalog.forwardBytes, catalog.dropCount, catalog.windowsHnsStats, catalog.tcpConnectionStats, catalog.tcpFlagGauges, catalog.hnsVfpDisagreements] as const;

/** `sources` replaces the real HCN/HNS/vfpctrl (tests); the agent runs `hnsstats`. */
export function createHnsstatsPlugin(sources?: () => HnsSources): PluginDefinition<object> {
  return definePlugin<object>({
    name: 'hnsstats',
    os: 'windows',
    description: 'HNS endpoint packets, bytes and drops and VFP port TCP/ACL counters, summed over the node (computenetwork.dll, vmcompute.dll, vfpctrl)',
    defaultEnabled: true,
    config: {},
    hooks: [],
    emits: EMITS,
    start: (ctx) =>
      ResourceStack.build(async (s) => {
        const src = sources ? sources() : { hcn: openHcn(), hns: openHns(), vfpctrl: (ports: readonly string[]) => runVfpctrl(ports), vfpList: () => runVfpctrlList() };
        const tcpStats = new OwnedSeries(ctx.metrics.gauge(catalog.tcpConnectionStats));
        const endpointFlows = new EndpointFlows();
        let lastReason: string | undefined;
        await poll(s, ctx.agent.metricsIntervalMs, async (signal) => {
          const reading = await readHns(src);
          if (signal.aborted) return;
          const rows = nodeRows(reading.endpoints);
          replaceSeries(ctx.metrics.gauge(catalog.forwardCount), rows.forwardCount);
          replaceSeries(ctx.metrics.gauge(catalog.forwardBytes), rows.forwardBytes);
          replaceSeries(ctx.metrics.gauge(catalog.dropCount), rows.dropCount);
          replaceSeries(ctx.metrics.gauge(catalog.windowsHnsStats), rows.windowsHnsStats);
          replaceSeries(ctx.metrics.gauge(catalog.tcpFlagGauges), rows.tcpFlagGauges);
          tcpStats.replace(rows.tcpConnectionStats);
          // No series while either list cannot be read (the failure is in the status), rather than a 0 that says "they agree".
          const d = reading.disagreements;
          replaceSeries(ctx.metrics.gauge(catalog.hnsVfpDisagreements), d ? [[{ kind: 'endpoint_without_port' }, d.endpointsWithoutPort.length], [{ kind: 'port_without_endpoint' }, d.portsWithoutEndpoint.length]] : []);
          // Per-endpoint deltas as flows, when flows are wanted (pod level or Hubble: ctx.flows).
          if (ctx.flows) {
            const flows = endpointFlows.next(reading.endpoints, Date.now());
            if (flows.length) ctx.flows.consume({ source: 'hnsstats', flows });
          }
          const reason = reading.failures.length ? reading.failures.join('; ') : undefined;
          if (reason !== lastReason) ctx.log.debug('hnsstats reading changed completeness', { endpoints: reading.endpoints.length, vanished: reading.vanished });
          lastReason = reason;
          if (reason === undefined) ctx.status.ok('endpoints');
          else ctx.status.degraded('endpoints', reason);
        }, (e) => ctx.status.degraded('endpoints', `hnsstats tick failed: ${errMessage(e)}`));
      }),
  });
}

export const hnsstats = createHnsstatsPlugin();
