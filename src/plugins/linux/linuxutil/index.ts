/**
 * linuxutil: node-level TCP/UDP/IP counters from /proc/net and per-interface statistics from a
 * netlink link dump and ethtool, refreshed every metricsIntervalDuration. See README.md.
 */
import { openEthtool, openLinkDumper, type EthtoolClient } from '../../../ffi/linux/index.js';
import { ResourceStack, definePlugin, errMessage, poll, type HookSpec, type PluginDefinition } from '../../../plugin/index.js';
import { EMITS, degradedReason, publish, readAll } from './collect.js';
import { linuxutilConfig, type LinuxutilConfig } from './config.js';
import { InterfaceReader, type LinkSource } from './interfaces.js';
import { PROC_FILES, ParseCache } from './proc.js';

export const PROC = '/proc';

/** Where the plugin reads; only tests change it (the agent runs `linuxutil`, built with the defaults). */
export interface LinuxutilSources {
  /** /proc, or a directory with the same `net/` files. */
  readonly procRoot?: string;
  /** The interfaces and their counters (default: a netlink link dump of the agent's namespace). */
  readonly links?: LinkSource;
}

export function createLinuxutilPlugin(sources: LinuxutilSources = {}): PluginDefinition<LinuxutilConfig> {
  const procRoot = sources.procRoot ?? PROC;
  const hooks: HookSpec[] = [
    ...Object.values(PROC_FILES).map((f): HookSpec => ({ kind: 'file', path: `${procRoot}/${f.path}`, ...(f.optional ? { optional: true } : {}) })),
  ];
  return definePlugin<LinuxutilConfig>({
    name: 'linuxutil',
    os: 'linux',
    description: 'TCP socket states, TCP/IP/UDP kernel counters and per-interface statistics (/proc/net, netlink, ethtool)',
    defaultEnabled: true,
    config: linuxutilConfig,
    hooks,
    emits: EMITS,
    start: (ctx) =>
      ResourceStack.build(async (s) => {
        let ethtool: EthtoolClient | undefined;
        let ethtoolUnavailable: string | undefined;
        try {
          ethtool = s.use(openEthtool());
        } catch (e) {
          ethtoolUnavailable = errMessage(e);
        }
        let links = sources.links;
        if (!links) {
          try {
            const dumper = s.use(openLinkDumper());
            links = () => dumper.dump();
          } catch (e) {
            // The /proc part still works; every tick reports the interfaces as unreadable (degraded).
            links = () => {
              throw e;
            };
          }
        }
        const interfaces = new InterfaceReader(links, ctx.config.interfaceStatsExclude, ethtool, ctx.config.interfaceStatsMode);
        let lastReason: string | undefined;
        // Between ticks: a /proc file whose text did not change is not parsed again.
        const parsed = new ParseCache();
        // Released in reverse: the poll (waiting for a tick in flight) first, then the ethtool socket.
        await poll(s, ctx.agent.metricsIntervalMs, async (signal) => {
          const reading = await readAll(interfaces, procRoot, parsed);
          if (signal.aborted) return;
          publish(ctx.metrics, reading);
          const reason = degradedReason(reading, ethtoolUnavailable);
          if (reason !== lastReason) ctx.log.debug('linuxutil reading changed completeness', { complete: reason === undefined });
          lastReason = reason;
          if (reason === undefined) ctx.status.ok('statistics');
          else ctx.status.degraded('statistics', reason);
        }, (e) => ctx.status.degraded('statistics', `linuxutil tick failed: ${errMessage(e)}`));
      }),
  });
}

export const linuxutil = createLinuxutilPlugin();
