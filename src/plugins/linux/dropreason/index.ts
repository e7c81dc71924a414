/**
 * dropreason: packets the kernel drops, by the kernel's drop reason and direction, from
 * tp_btf/kfree_skb, aggregated in the kernel per CPU. See README.md.
 */
import { dropreasonHooks, type HookChoice, kernelEnum, perCpuReader } from '../../../ffi/linux/index.js';
import { catalog, replaceSeries } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, errMessage, every, type HookSpec, type PluginContext } from '../../../plugin/index.js';
import { emitFlows, wireEvents } from '../ebpf-shared/events.js';
import { loadTracepointObject, onHook } from '../ebpf-shared/hooks.js';
import { dropreasonConfig, type DropreasonConfig } from './config.js';
import { kernelClock } from '../ebpf-shared/clock.js';
import { createDropDecoder, reasonNames } from './decode.js';
import { EVENTS_MAP, LOST_MAP, METRICS_MAP, readDropTotals } from './maps.js';

const hooks: HookSpec[] = [
  { kind: 'library', name: 'libbpf.so.1' },
  { kind: 'btf' },
  { kind: 'tracepoint', target: 'skb/kfree_skb' },
];

const EMITS = [catalog.dropCount, catalog.dropBytes, catalog.lostEventsCounter, catalog.parsedPacketsCounter];

export const dropreason = definePlugin<DropreasonConfig>({
  name: 'dropreason',
  os: 'linux',
  description: "Dropped packets and bytes by the kernel's drop reason (tp_btf/kfree_skb)",
  defaultEnabled: true,
  config: dropreasonConfig,
  hooks,
  emits: EMITS,
  start: (ctx) => runDropreason(ctx),
});

/** Starts the plugin with the hooks `chooseHooks` picks (hooks.ts by default; tests pass others). */
export function runDropreason(ctx: PluginContext<DropreasonConfig>, chooseHooks: () => readonly HookChoice[] = dropreasonHooks): Promise<ResourceStack> {
  return ResourceStack.build((s) => {
    const [hook] = onHook(ctx.log, 'tp_btf/kfree_skb', chooseHooks);
    if (!hook) throw new Error('no dropreason hook chosen');
    const podLevel = ctx.flows !== undefined;
    const reasonName = reasonNames(onHook(ctx.log, hook.label, () => kernelEnum('skb_drop_reason') ?? new Map()), ctx.config.dropReasonNames);
    const obj = loadTracepointObject(s, ctx, 'dropreason', hook, EVENTS_MAP, ctx.config.dropReasonRingBufferSize);
    s.defer(() => ctx.metrics.reset([catalog.dropCount, catalog.dropBytes]));
    const totals = perCpuReader(obj.map(METRICS_MAP));
    const publish = (): void => {
      try {
        const rows = readDropTotals(totals, reasonName);
        replaceSeries(ctx.metrics.gauge(catalog.dropCount), rows.count);
        replaceSeries(ctx.metrics.gauge(catalog.dropBytes), rows.bytes);
        ctx.status.ok(METRICS_MAP);
      } catch (e) {
        ctx.status.degraded(METRICS_MAP, `reading ${METRICS_MAP}: ${errMessage(e)}`);
      }
    };
    publish();
    every(s, ctx.agent.metricsIntervalMs, publish);
    if (podLevel) {
      const clock = kernelClock();
      wireEvents(s, ctx, obj, {
        source: 'dropreason', eventsMap: EVENTS_MAP, lostMap: LOST_MAP, decode: createDropDecoder({ reasonName, clock }), clock,
        onRecords: (flows) => emitFlows(ctx, 'dropreason', flows),
      });
    }
    ctx.log.info('eBPF hook attached', { hook: hook.label, program: hook.program, podLevel, dropReasonNames: ctx.config.dropReasonNames, ...(podLevel ? { ringBufferSize: ctx.config.dropReasonRingBufferSize } : {}) });
  });
}
