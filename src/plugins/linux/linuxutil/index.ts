/**
 * linuxutil: node-level TCP/UDP/IP counters from /proc/net and per-interface statistics from
 * /sys/class/net and ethtool, refreshed every metricsIntervalDuration. See README.md.
 */
import { openEthtool, type EthtoolClient } from '../../../ffi/linux/ethtool.js';
import { ResourceStack, definePlugin, errMessage, poll, type HookSpec, type PluginDefinition } from '../../../plugin/index.js';
import { EMITS, degradedReason, publish, readAll } from './collect.js';
import { linuxutilConfig, type LinuxutilConfig } from './config.js';
import { InterfaceReader } from './interfaces.js';
import { PROC_FILES } from './proc.js';

export const SYS_CLASS_NET = '/sys/class/net';
export const PROC = '/proc';

/** Where the plugin reads; only tests change it (the agent runs `linuxutil`, built with the defaults). */
export interface LinuxutilPaths {
  /** /proc, or a directory with the same `net/` files. */
  readonly procRoot?: string;
  readonly sysClassNet?: string;
}

export function createLinuxutilPlugin(paths: LinuxutilPaths = {}): PluginDefinition<LinuxutilConfig> {
  const procRoot = paths.procRoot ?? PROC;
  const sysClassNet = paths.sysClassNet ?? SYS_CLASS_NET;
  const hooks: HookSpec[] = [
    ...Object.values(PROC_FILES).map((f): HookSpec => ({ kind: 'file', path: `${procRoot}/${f.path}`, ...(f.optional ? { optional: true } : {}) })),
    { kind: 'file', path: sysClassNet },
  ];
  return definePlugin<LinuxutilConfig>({
    name: 'linuxutil',
    os: 'linux',
    description: 'TCP socket states, TCP/IP/UDP kernel counters and per-interface statistics (/proc/net, /sys/class/net, ethtool)',
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
        const interfaces = new InterfaceReader(sysClassNet, ctx.config.interfaceStatsExclude, ethtool);
        let lastReason: string | undefined;
        // Released in reverse: the poll (waiting for a tick in flight) first, then the ethtool socket.
        await poll(s, ctx.agent.metricsIntervalMs, async (signal) => {
          const reading = await readAll(interfaces, procRoot);
          if (signal.aborted) return;
          publish(ctx.metrics, reading);
          const reason = degradedReason(reading, ethtoolUnavailable);
          if (reason !== lastReason) ctx.log.debug('linuxutil reading changed completeness', { complete: reason === undefined });
          lastReason = reason;
          if (reason === undefined) ctx.status.ok();
          else ctx.status.degraded(reason);
        }, (e) => ctx.status.degraded(`linuxutil tick failed: ${errMessage(e)}`));
      }),
  });
}

export const linuxutil = createLinuxutilPlugin();
