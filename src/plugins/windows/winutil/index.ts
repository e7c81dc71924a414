/**
 * winutil: what linuxutil reports on Linux, from iphlpapi on Windows: TCP connection states,
 * TCP/IP/UDP counters and per-interface statistics, every metricsIntervalDuration. See README.md.
 */
import { AF_INET, AF_INET6, openIphlpapi, type Iphlpapi } from '../../../ffi/windows/index.js';
import { catalog, replaceSeries } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, errMessage, poll, type PluginDefinition } from '../../../plugin/index.js';
import { OwnedSeries } from '../owned-series.js';
import { winutilRows, type WinutilInputs } from './rows.js';

export const EMITS = [catalog.tcpState, catalog.tcpConnectionStats, catalog.ipConnectionStats, catalog.udpConnectionStats, catalog.interfaceStats] as const;

/** Every call once; a failing call is named in `failures` and its family left empty. */
export function readWinutil(api: Iphlpapi): { inputs: WinutilInputs; failures: string[] } {
  const failures: string[] = [];
  const attempt = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch (e) {
      failures.push(errMessage(e));
      return undefined;
    }
  };
  const inputs: WinutilInputs = {
    tcpStates: attempt(() => api.tcpStates()),
    tcp4: attempt(() => api.tcpStats(AF_INET).stats),
    tcp6: attempt(() => api.tcpStats(AF_INET6).stats),
    ip4: attempt(() => api.ipStats(AF_INET)),
    ip6: attempt(() => api.ipStats(AF_INET6)),
    udp4: attempt(() => api.udpStats(AF_INET)),
    udp6: attempt(() => api.udpStats(AF_INET6)),
    interfaces: attempt(() => api.interfaces()),
  };
  return { inputs, failures };
}

export function createWinutilPlugin(open: () => Iphlpapi = openIphlpapi): PluginDefinition<object> {
  return definePlugin<object>({
    name: 'winutil',
    os: 'windows',
    description: 'TCP connection states, TCP/IP/UDP counters and per-interface statistics (iphlpapi.dll)',
    defaultEnabled: true,
    config: {},
    hooks: [],
    emits: EMITS,
    start: (ctx) =>
      ResourceStack.build(async (s) => {
        const api = open();
        const tcpStats = new OwnedSeries(ctx.metrics.gauge(catalog.tcpConnectionStats));
        await poll(s, ctx.agent.metricsIntervalMs, (signal) => {
          const { inputs, failures } = readWinutil(api);
          if (signal.aborted) return Promise.resolve();
          const rows = winutilRows(inputs);
          replaceSeries(ctx.metrics.gauge(catalog.tcpState), rows.tcpState);
          tcpStats.replace(rows.tcpConnectionStats);
          replaceSeries(ctx.metrics.gauge(catalog.ipConnectionStats), rows.ipConnectionStats);
          replaceSeries(ctx.metrics.gauge(catalog.udpConnectionStats), rows.udpConnectionStats);
          replaceSeries(ctx.metrics.gauge(catalog.interfaceStats), rows.interfaceStats);
          if (failures.length) ctx.status.degraded('statistics', failures.join('; '));
          else ctx.status.ok('statistics');
          return Promise.resolve();
        }, (e) => ctx.status.degraded('statistics', `winutil tick failed: ${errMessage(e)}`));
      }),
  });
}

export const winutil = createWinutilPlugin();
