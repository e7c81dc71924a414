/**
 * dns: DNS requests and responses seen on the node (UDP and TCP, IPv4 and IPv6, port 53), captured
 * into a ring buffer by a socket filter (what arrives) and a tc egress program on every interface but
 * lo and bridge ports (what this host sends), and parsed here. See README.md.
 */
import { attachPacketSocketFilter, dnsHooks, openBpfObject, openLinkDumper, removeTcLeftovers } from '../../../ffi/linux/index.js';
import { catalog } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, type HookSpec, type PluginContext } from '../../../plugin/index.js';
import { emitFlows, wireEvents } from '../ebpf-shared/events.js';
import { onHook, wakeupBytes } from '../ebpf-shared/hooks.js';
import { dnsConfig, type DnsConfig } from './config.js';
import { kernelClock } from '../ebpf-shared/clock.js';
import { countMessages, dnsFlow, tryDecodeDnsEvent, type DnsRecord } from './decode.js';
import { EVENTS_MAP, LOST_MAP } from './maps.js';
import { LinkRoles, bridgePorts, isBridgeDuplicate } from './bridges.js';
import { attachTcPrograms, watchLinks } from '../ebpf-shared/tc-links.js';
import type { KindedLink } from '../ebpf-shared/links.js';

const hooks: HookSpec[] = [{ kind: 'library', name: 'libbpf.so.1' }, { kind: 'btf' }];

const EMITS = [catalog.dnsRequestCount, catalog.dnsResponseCount, catalog.lostEventsCounter, catalog.parsedPacketsCounter, catalog.interfaceAttachFailed];
const LOOPBACK_IFINDEX = 1;

export interface DnsTiming {
  /** The interface watcher follows link notifications; it also reads every link this often (default 60 s). */
  readonly linkResyncMs?: number;
  /** While an interface fails to attach, the links are looked at again this often (default 1 s). */
  readonly attachRetryMs?: number;
  /** Tests in the machine's own namespace: the links that get the egress program (default every one but lo). */
  readonly interfaces?: (link: KindedLink) => boolean;
}

export const dns = definePlugin<DnsConfig>({
  name: 'dns',
  os: 'linux',
  description: 'DNS requests and responses seen on the node (socket filter for arrivals, tc egress for what the node sends; parsed in the agent)',
  defaultEnabled: true,
  config: dnsConfig,
  hooks,
  emits: EMITS,
  start: (ctx) => runDns(ctx),
});

/** Starts the plugin; tests pass shorter timings. */
export function runDns(ctx: PluginContext<DnsConfig>, timing: DnsTiming = {}): Promise<ResourceStack> {
  return ResourceStack.build((s) => {
    const [socket, egress] = dnsHooks();
    if (!socket || !egress) throw new Error('no dns hooks chosen');
    const obj = s.use(
      onHook(ctx.log, socket.label, () =>
        openBpfObject('dns', {
          programs: [socket.program, egress.program],
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
    // What this host sends: tc egress on every interface but lo (whose packets the socket sees
    // arriving) and a bridge's ports, new ones as they come. What the host sends through a bridge leaves
    // the bridge device first (its tc egress runs, then the bridge forwards to the port), and what leaves
    // a port otherwise was forwarded from another port, which the program would only decline: so pod to
    // pod packets on a bridge run no dns program on their way out (a veth attached before its CNI made
    // it a port is detached then). A link it cannot attach to is a degraded source (`interface <name>`);
    // arrivals are still counted there.
    const leftovers = removeTcLeftovers([egress.program]);
    if (leftovers) ctx.log.info('stale tc filters of an earlier run removed', { interface: 'every interface', count: leftovers });
    const modes = new Set<string>();
    const watcher = watchLinks(s, ctx, {
      plugin: 'dns', noun: 'interface', source: 'interface', watcher: 'interface watcher', links: () => links.dump(),
      choose: (all) => {
        const ports = bridgePorts(all);
        roles.learn(all, ports); // the records' roles from the same dump (no second dump per notification)
        return all.filter((l) => l.ifindex !== LOOPBACK_IFINDEX && !ports.has(l.ifindex) && (timing.interfaces?.(l) ?? true));
      },
      attach: (link) => {
        const h = attachTcPrograms(ctx, obj, [egress], link.ifindex, `interface ${link.name}`, ctx.config.tcMode);
        modes.add(h.mode);
        return h;
      },
      ...(timing.linkResyncMs === undefined ? {} : { resyncMs: timing.linkResyncMs }),
      ...(timing.attachRetryMs === undefined ? {} : { retryMs: timing.attachRetryMs }),
    });
    // What arrives: the socket starts receiving only once the ring buffer is drained, so nothing is missed.
    s.use(onHook(ctx.log, socket.label, () => attachPacketSocketFilter(obj.program(socket.program), { arrivalsOnly: true })));
    ctx.log.info('eBPF hooks attached', {
      hooks: [socket.label, egress.label], programs: [socket.program, egress.program], mode: [...modes].join(','), interfaces: watcher.attached().length, podLevel,
    });
  });
}
