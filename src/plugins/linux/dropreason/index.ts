/**
 * dropreason: packets the kernel drops, by the kernel's drop reason and direction, from
 * tp_btf/kfree_skb, aggregated in the kernel per CPU. See README.md.
 */
import { dropreasonHooks, type DropReasonSource, type HookChoice, kernelEnum, perCpuReader } from '../../../ffi/linux/index.js';
import { catalog, replaceSeries } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, errMessage, every, type HookSpec, type PluginContext } from '../../../plugin/index.js';
import { emitFlows, wireEvents } from '../ebpf-shared/events.js';
import { loadTracepointObject, onHook } from '../ebpf-shared/hooks.js';
import { dropreasonConfig, type DropreasonConfig } from './config.js';
import { kernelClock } from '../ebpf-shared/clock.js';
import { FALLBACK_REASONS, createDropDecoder, reasonNames } from './decode.js';
import { kernelSymbolRanges } from './kallsyms.js';
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

type DropHookChooser = (o: { readonly forceNoReason: boolean }) => readonly (HookChoice & { readonly source?: DropReasonSource })[];

/** Starts the plugin with the hooks `chooseHooks` picks (hooks.ts by default; tests pass others). */
export function runDropreason(ctx: PluginContext<DropreasonConfig>, chooseHooks: DropHookChooser = dropreasonHooks): Promise<ResourceStack> {
  return ResourceStack.build((s) => {
    const [hook] = onHook(ctx.log, 'tp_btf/kfree_skb', () => chooseHooks({ forceNoReason: ctx.config.dropReasonFallback === 'always' }));
    if (!hook) throw new Error('no dropreason hook chosen');
    const source = hook.source ?? 'reason';
    const podLevel = ctx.flows !== undefined;
    const reasons = source === 'reason' ? onHook(ctx.log, hook.label, () => kernelEnum('skb_drop_reason') ?? new Map<number, string>()) : FALLBACK_REASONS;
    const reasonName = reasonNames(reasons, ctx.config.dropReasonNames);
    const rodata = source === 'noreason' ? fallbackRodata(ctx) : notDropRodata(reasons);
    const obj = loadTracepointObject(s, ctx, 'dropreason', hook, EVENTS_MAP, ctx.config.dropReasonRingBufferSize, rodata);
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
    ctx.log.info('eBPF hook attached', { hook: hook.label, program: hook.program, reasons: source === 'reason' ? 'kernel' : 'fallback', podLevel, dropReasonNames: ctx.config.dropReasonNames, ...(podLevel ? { ringBufferSize: ctx.config.dropReasonRingBufferSize } : {}) });
  });
}

/**
 * Functions whose kfree_skb is a netfilter DROP verdict: nf_hook_slow on every kernel (5.15's only
 * one), nft_do_chain where nftables frees its drops itself (NF_DROP_REASON, newer kernels).
 */
export const NETFILTER_DROP_FUNCTIONS = ['nf_hook_slow', 'nft_do_chain'] as const;

/**
 * The no-reason variant's read-only config: the netfilter functions' bounds from /proc/kallsyms, so
 * their frees read NETFILTER_DROP. Without them (addresses hidden, no such symbol) those drops are
 * NOT_SPECIFIED too. A module loaded later (nf_tables) is not seen until the plugin restarts.
 */
function fallbackRodata(ctx: PluginContext<DropreasonConfig>): Record<string, bigint> {
  const forced = ctx.config.dropReasonFallback === 'always';
  let ranges: ReturnType<typeof kernelSymbolRanges> = [];
  try {
    ranges = kernelSymbolRanges(NETFILTER_DROP_FUNCTIONS);
  } catch (e) {
    ctx.log.warn('kfree_skb without a drop reason, /proc/kallsyms unreadable: every drop is counted as NOT_SPECIFIED', { forced, error: errMessage(e) });
    return {};
  }
  if (!ranges.length) {
    ctx.log.warn('kfree_skb without a drop reason, no netfilter function in /proc/kallsyms (or its addresses are hidden): every drop is counted as NOT_SPECIFIED', { forced });
    return {};
  }
  ctx.log.info('kfree_skb without a drop reason: drops freed by netfilter count as NETFILTER_DROP, the others as NOT_SPECIFIED', { forced, functions: ranges.map((r) => r.name) });
  const out: Record<string, bigint> = {};
  ranges.slice(0, 2).forEach((r, i) => {
    out[`nf_fn${i}_start`] = r.start;
    out[`nf_fn${i}_end`] = r.end;
  });
  return out;
}

/**
 * The reason program skips SKB_NOT_DROPPED_YET and SKB_CONSUMED (not drops) by the kernel's values
 * for them: 0 and 1 on recent kernels (6.x); the first kernels with reasons lack one or both, and their
 * 0 and 1 are drops (NOT_SPECIFIED, NO_SOCKET on 5.17). A name the kernel lacks gets a value no reason has.
 */
export function notDropRodata(reasons: ReadonlyMap<number, string>): Record<string, number> {
  const valueOf = (name: string): number => {
    for (const [v, n] of reasons) if (n === name) return v >>> 0;
    return 0xffffffff;
  };
  return { not_a_drop_0: valueOf('SKB_NOT_DROPPED_YET'), not_a_drop_1: valueOf('SKB_CONSUMED') };
}
