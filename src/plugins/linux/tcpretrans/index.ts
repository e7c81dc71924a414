/**
 * tcpretrans: TCP retransmissions on the node (tp_btf/tcp_retransmit_skb): a node counter of
 * ours, tcp_retransmission_count, and per-connection records for the pod-level pipeline. See README.md.
 */
import { perCpuReader, tcpretransHooks, type HookChoice } from '../../../ffi/linux/index.js';
import { catalog } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, errMessage, every, type HookSpec, type PluginContext } from '../../../plugin/index.js';
import { emitFlows, wireEvents } from '../ebpf-shared/events.js';
import { loadTracepointObject, onHook } from '../ebpf-shared/hooks.js';
import { tcpretransConfig, type TcpretransConfig } from './config.js';
import { kernelClock } from '../ebpf-shared/clock.js';
import { createRetransDecoder } from './decode.js';
import { EVENTS_MAP, LOST_MAP, METRICS_MAP, deltaTracker, readRetransTotals } from './maps.js';

const hooks: HookSpec[] = [
  { kind: 'library', name: 'libbpf.so.1' },
  { kind: 'btf' },
  { kind: 'tracepoint', target: 'tcp/tcp_retransmit_skb' },
];

const EMITS = [catalog.tcpRetransmissionCount, catalog.lostEventsCounter, catalog.parsedPacketsCounter];

export const tcpretrans = definePlugin<TcpretransConfig>({
  name: 'tcpretrans',
  os: 'linux',
  description: 'TCP retransmissions (tp_btf/tcp_retransmit_skb): a node counter and per-connection records',
  defaultEnabled: false,
  config: tcpretransConfig,
  hooks,
  emits: EMITS,
  start: (ctx) => runTcpretrans(ctx),
});

/** Starts the plugin with the hooks `chooseHooks` picks (hooks.ts by default; tests pass others). */
export function runTcpretrans(ctx: PluginContext<TcpretransConfig>, chooseHooks: () => readonly HookChoice[] = tcpretransHooks): Promise<ResourceStack> {
  return ResourceStack.build((s) => {
    const [hook] = onHook(ctx.log, 'tp_btf/tcp_retransmit_skb', chooseHooks);
    if (!hook) throw new Error('no tcpretrans hook chosen');
    const podLevel = ctx.flows !== undefined;
    const obj = loadTracepointObject(s, ctx, 'tcpretrans', hook, EVENTS_MAP, ctx.agent.packetParserRingBufferSize);
    s.defer(() => ctx.metrics.reset([catalog.tcpRetransmissionCount]));
    const reader = perCpuReader(obj.map(METRICS_MAP));
    const counter = ctx.metrics.counter(catalog.tcpRetransmissionCount);
    const delta = deltaTracker();
    const publish = (): void => {
      try {
        counter.inc(delta(readRetransTotals(reader).segs));
        ctx.status.ok(METRICS_MAP);
      } catch (e) {
        ctx.status.degraded(METRICS_MAP, `reading ${METRICS_MAP}: ${errMessage(e)}`);
      }
    };
    counter.inc(0);
    every(s, ctx.agent.metricsIntervalMs, publish);
    if (podLevel) {
      const clock = kernelClock();
      wireEvents(s, ctx, obj, {
        source: 'tcpretrans', eventsMap: EVENTS_MAP, lostMap: LOST_MAP, decode: createRetransDecoder({ clock }), clock,
        onRecords: (flows) => emitFlows(ctx, 'tcpretrans', flows),
      });
    }
    ctx.log.info('eBPF hook attached', { hook: hook.label, program: hook.program, podLevel });
  });
}
