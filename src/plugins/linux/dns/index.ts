/**
 * dns: DNS requests and responses seen on the node (UDP and TCP, IPv4 and IPv6, port 53), captured
 * by a socket filter into a ring buffer and parsed here. See README.md.
 */
import { attachPacketSocketFilter, dnsHooks, openBpfObject, openLinkDumper } from '../../../ffi/linux/index.js';
import { catalog } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, type HookSpec } from '../../../plugin/index.js';
import { emitFlows, wireEvents } from '../ebpf-shared/events.js';
import { onHook, wakeupBytes } from '../ebpf-shared/hooks.js';
import { dnsConfig, type DnsConfig } from './config.js';
import { kernelClock } from '../ebpf-shared/clock.js';
import { countMessages, dnsFlow, tryDecodeDnsEvent, type DnsRecord } from './decode.js';
import { EVENTS_MAP, LOST_MAP } from './maps.js';
import { LinkRoles, isBridgeDuplicate } from './bridges.js';

const hooks: HookSpec[] = [{ kind: 'library', name: 'libbpf.so.1' }, { kind: 'btf' }];

const EMITS = [catalog.dnsRequestCount, catalog.dnsResponseCount, catalog.lostEventsCounter, catalog.parsedPacketsCounter];

export const dns = definePlugin<DnsConfig>({
  name: 'dns',
  os: 'linux',
  description: 'DNS requests and responses seen on the node (socket filter, parsed in the agent)',
  defaultEnabled: true,
  config: dnsConfig,
  hooks,
  emits: EMITS,
  start: (ctx) =>
    ResourceStack.build((s) => {
      const [hook] = dnsHooks();
      if (!hook) throw new Error('no dns hook chosen');
      const obj = s.use(
        onHook(ctx.log, hook.label, () =>
          openBpfObject('dns', {
            programs: [hook.program],
            rodata: { wakeup_bytes: wakeupBytes(ctx.config.dnsRingBufferSize) },
            maxEntries: { [EVENTS_MAP]: ctx.config.dnsRingBufferSize },
          }),
        ),
      );
      s.defer(() => ctx.metrics.reset([catalog.dnsRequestCount, catalog.dnsResponseCount]));
      const requests = ctx.metrics.counter(catalog.dnsRequestCount);
      const responses = ctx.metrics.counter(catalog.dnsResponseCount);
      requests.inc(0);
      responses.inc(0);
      const podLevel = ctx.flows !== undefined;
      const clock = kernelClock();
      const links = s.use(openLinkDumper());
      const roles = new LinkRoles(() => links.dump());
      wireEvents<DnsRecord | undefined>(s, ctx, obj, {
        source: 'dns', eventsMap: EVENTS_MAP, lostMap: LOST_MAP, decode: tryDecodeDnsEvent, clock,
        onRecords: (all) => {
          const records = all.filter((r): r is DnsRecord => r !== undefined && !isBridgeDuplicate(roles.role(r.ifindex), r.outgoing));
          const n = countMessages(records);
          if (n.requests) requests.inc(n.requests);
          if (n.responses) responses.inc(n.responses);
          if (podLevel) emitFlows(ctx, 'dns', records.map((r) => dnsFlow(r, clock)));
        },
      });
      // The socket starts receiving only once the ring buffer is drained, so nothing is missed.
      s.use(onHook(ctx.log, hook.label, () => attachPacketSocketFilter(obj.program(hook.program))));
      ctx.log.info('eBPF hook attached', { hook: hook.label, program: hook.program, podLevel });
    }),
});
