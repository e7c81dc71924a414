/**
 * packetforward: packets and bytes in and out of the node through its external interfaces
 * (default-route interfaces, or packetForwardInterfaces), counted by tc programs per CPU. See README.md.
 */
import { attachTcAuto, loadSys, openBpfObject, packetforwardHooks, perCpuReader, removeTcLeftovers } from '../../../ffi/linux/index.js';
import { catalog, replaceSeries } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, errMessage, every, type HookSpec } from '../../../plugin/index.js';
import { onHook } from '../ebpf-shared/hooks.js';
import { packetforwardConfig, type PacketforwardConfig } from './config.js';
import { METRICS_MAP } from './decode.js';
import { readForwardTotals } from './maps.js';
import { defaultRouteInterfaces } from './routes.js';

const hooks: HookSpec[] = [{ kind: 'library', name: 'libbpf.so.1' }, { kind: 'btf' }, { kind: 'tc' }];

const EMITS = [catalog.forwardCount, catalog.forwardBytes];

export const packetforward = definePlugin<PacketforwardConfig>({
  name: 'packetforward',
  os: 'linux',
  description: "Packets and bytes through the node's external interfaces (tc clsact ingress/egress)",
  defaultEnabled: true,
  config: packetforwardConfig,
  hooks,
  emits: EMITS,
  start: (ctx) =>
    ResourceStack.build((s) => {
      const interfaces = ctx.config.interfaces.length ? [...ctx.config.interfaces] : defaultRouteInterfaces();
      // Retryable: a default route may appear later.
      if (!interfaces.length) throw new Error('no external interface: no default route, and packetForwardInterfaces is empty');
      const sys = loadSys();
      const ifindexes = interfaces.map((name) => {
        const ifindex = sys.ifNameToIndex(name);
        if (!ifindex) throw new Error(`interface ${name} does not exist`);
        return { name, ifindex };
      });
      const choices = packetforwardHooks();
      const obj = s.use(onHook(ctx.log, 'tc', () => openBpfObject('packetforward', { programs: choices.map((c) => c.program) })));
      s.defer(() => ctx.metrics.reset(EMITS));
      const modes = new Set<string>();
      // clsact filters a killed run left, on any interface (also ones not in this run's list).
      let staleFiltersRemoved = removeTcLeftovers(choices.map((c) => c.program));
      for (const { name, ifindex } of ifindexes) {
        for (const c of choices) {
          const dir = c.target === 'ingress' ? 'ingress' : 'egress';
          const att = s.use(onHook(ctx.log, `${c.label} on ${name}`, () => attachTcAuto(obj.program(c.program), ifindex, dir, ctx.config.tcMode)));
          modes.add(att.mode);
          staleFiltersRemoved += att.staleRemoved;
        }
      }
      const reader = perCpuReader(obj.map(METRICS_MAP));
      const count = ctx.metrics.gauge(catalog.forwardCount);
      const bytes = ctx.metrics.gauge(catalog.forwardBytes);
      const publish = (): void => {
        // An interface deleted (or replaced under its name) took our tc programs with it: fail, so
        // the manager restarts the plugin, which attaches to the interfaces as they are now.
        const lost = ifindexes.find(({ name, ifindex }) => sys.ifNameToIndex(name) !== ifindex);
        if (lost) {
          ctx.status.failed(new Error(`interface ${lost.name} (ifindex ${lost.ifindex}) is gone, and its tc programs with it`));
          return;
        }
        try {
          // A direction whose totals did not move costs no prom-client write (replaceSeries compares).
          const totals = readForwardTotals(reader);
          replaceSeries(count, totals.map((t) => [{ direction: t.direction }, t.packets] as const));
          replaceSeries(bytes, totals.map((t) => [{ direction: t.direction }, t.bytes] as const));
          ctx.status.ok(METRICS_MAP);
        } catch (e) {
          ctx.status.degraded(METRICS_MAP, `reading ${METRICS_MAP}: ${errMessage(e)}`);
        }
      };
      publish();
      every(s, ctx.agent.metricsIntervalMs, publish);
      ctx.log.info('eBPF hooks attached', { hooks: choices.map((c) => c.label), interfaces, mode: [...modes].join(','), staleFiltersRemoved });
    }),
});
