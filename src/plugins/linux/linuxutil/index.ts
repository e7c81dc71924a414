/**
 * linuxutil: node-level TCP/UDP/IP counters from /proc/net and per-interface statistics from
 * /sys/class/net and ethtool, refreshed every metricsIntervalDuration. See README.md.
 */
import { openEthtool, type EthtoolClient } from '../../../ffi/linux/ethtool.js';
import { ResourceStack, definePlugin, errMessage, every, type HookSpec, type PluginContext, type PluginDefinition } from '../../../plugin/index.js';
import { EMITS, degradedReason, publish, readAll, type Reading } from './collect.js';
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
        const loop = createLoop(ctx, () => readAll(interfaces, procRoot), ethtoolUnavailable);
        // Released in reverse: the timer first, then the tick in flight, then the ethtool socket.
        s.defer(() => loop.stop());
        await loop.tick();
        every(s, ctx.agent.metricsIntervalMs, () => void loop.tick());
      }),
  });
}

export const linuxutil = createLinuxutilPlugin();

interface Loop {
  /** One read and publish; resolves when done, never rejects; skipped while one is in flight. */
  tick(): Promise<void>;
  /** No publish after this; resolves when the tick in flight is done. */
  stop(): Promise<void>;
}

function createLoop(ctx: PluginContext<LinuxutilConfig>, read: () => Promise<Reading>, ethtoolUnavailable: string | undefined): Loop {
  let inFlight: Promise<void> | undefined;
  let stopped = false;
  let lastReason: string | undefined;

  async function once(): Promise<void> {
    try {
      const reading = await read();
      if (stopped || ctx.signal.aborted) return;
      publish(ctx.metrics, reading);
      const reason = degradedReason(reading, ethtoolUnavailable);
      if (reason !== lastReason) ctx.log.debug('linuxutil reading changed completeness', { complete: reason === undefined });
      lastReason = reason;
      if (reason === undefined) ctx.status.ok();
      else ctx.status.degraded(reason);
    } catch (e) {
      // readAll does not throw; this is a bug guard so that the timer never sees an exception.
      if (!stopped) ctx.status.degraded(`linuxutil tick failed: ${errMessage(e)}`);
    }
  }

  return {
    tick() {
      if (stopped) return Promise.resolve();
      inFlight ??= once().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    async stop() {
      stopped = true;
      await inFlight;
    },
  };
}
