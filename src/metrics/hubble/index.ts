/**
 * Cilium's Hubble metrics (`hubble_*`) from our enriched flows: one more consumer of the node's flow
 * pipeline (src/pipeline), beside the Metrics Module, the Hubble ring and the flow logs. Each entry
 * of `hubble.metrics.enabled` (parsed in src/config/hubble-metrics.ts) is one handler with Cilium's
 * family, fixed labels and context labels; series live in SeriesFamily (values in typed arrays,
 * label text built only at scrape), with the Metrics Module's series budget and overflow series.
 *
 * Our flows in Cilium's terms (the same mapping the Hubble server's flows use, src/flow/hubble/map.ts):
 * a DROPPED flow is a `Drop` event, a DNS flow an `L7` event with subtype `DNS`, every other flow a
 * `Trace` event whose subtype is its observation point (`to-endpoint`, `from-endpoint`,
 * `to-network`, `from-network`, `to-stack`). Drop reasons are the kernel's (or PktMon's) names, but
 * for NETFILTER_DROP, which is Cilium's POLICY_DENIED here (network policies on a Retina node are
 * netfilter rules); DNS rcodes get Cilium's names (`No Error`, `Non-Existent Domain`...).
 *
 * Deleted pods' series are removed as the Metrics Module's are (src/pipeline/pod-level-forget.ts
 * drives `forgetPodsInSteps`): every series whose source or destination names a deleted pod (by
 * `pod`, `pod-name` or `ip` context, or labelsContext's `*_pod`/`*_ip`).
 */
import type { HubbleMetricSpec } from '../../config/index.js';
import type { Flow, FlowBatch, FlowConsumer } from '../../flow/index.js';
import {
  hubbleDnsQueries, hubbleDnsResponseTypes, hubbleDnsResponses, hubbleDrop, hubbleFlowsProcessed, hubbleFlowsToWorld, hubblePortDistribution,
  hubbleTcpFlags, type MetricDef,
} from '../catalog.js';
import { goneSets, type GonePods, type GoneSets } from '../gone.js';
import type { MetricsRegistry } from '../registry.js';
import { SEP, SeriesFamily, cleanLabelValue, drain } from '../series.js';
import { HubbleContext, WORLD, reservedOf, type PodCheck, type Reserved, type Tail } from './context.js';

export { identityOf, appOf, reservedOf } from './context.js';

export interface HubbleMetricsOptions {
  readonly metrics: readonly HubbleMetricSpec[];
  /** Pod label keys (metricsPodLabelsAllowlist) and their Prometheus names (label_<key>). */
  readonly podLabels?: readonly { readonly key: string; readonly name: string }[];
  /** Where the families are exposed (the hubble.metrics.listenAddress server's registry). */
  readonly registry: Pick<MetricsRegistry, 'attach' | 'detach'>;
  readonly nodeName?: string;
  readonly isApiServer?: (ip: string) => boolean;
  /** Most series per family; past it, flows fold into the family's `overflow` series. Default 50 000. */
  readonly maxSeriesPerMetric?: number;
  readonly onOverflow?: (family: string, n: number) => void;
  readonly now?: () => number;
}

export interface HubbleMetrics extends FlowConsumer, Disposable {
  /** The families served, by name. */
  families(): SeriesFamily[];
  /** Removes every series of these deleted pods; returns how many (see the module's forgetPods). */
  forgetPods(gone: GonePods): number;
  forgetPodsInSteps(gone: GonePods, step: number): Generator<void, number, void>;
}

/** Cilium's v1.FlowProtocol of a flow. */
export function flowProtocol(f: Readonly<Flow>): string {
  if (f.verdict === 'DNS') return f.dns ? 'DNS' : 'Unknown L7';
  switch (f.proto) {
    case 6: return 'TCP';
    case 17: return 'UDP';
    case 1: return 'ICMPv4';
    case 58: return 'ICMPv6';
    case 132: return 'SCTP';
    default: return 'Unknown L4';
  }
}

/** Cilium's TraceObservationPoints names (an unknown point is sub-type 0, as src/flow/hubble/map.ts sends it). */
const TRACE_SUBTYPE: Readonly<Record<string, string>> = {
  TO_ENDPOINT: 'to-endpoint', TO_STACK: 'to-stack', FROM_ENDPOINT: 'from-endpoint', FROM_NETWORK: 'from-network', TO_NETWORK: 'to-network', UNKNOWN: 'to-endpoint',
};

/** Cilium's DNS rcode names (pkg/hubble/metrics/dns/rcode.go), by our rcode names. */
const RCODE_NAMES: Readonly<Record<string, string>> = {
  NOERROR: 'No Error', FORMERR: 'Format Error', SERVFAIL: 'Server Failure', NXDOMAIN: 'Non-Existent Domain', NOTIMP: 'Not Implemented',
  REFUSED: 'Query Refused', YXDOMAIN: 'Name Exists when it should not', YXRRSET: 'RR Set Exists when it should not',
  NXRRSET: 'RR Set that should exist does not', NOTAUTH: 'Not Authorized', NOTZONE: 'Name not contained in zone',
};

/** The DNS families' fixed values around `qtypes`: `rcode` before and `ips_returned` after it, or the record type before. */
class DnsHead {
  constructor(readonly lead: string, readonly trail: string) {}
}
/** A query's rcode and ips_returned: empty and 0, as Cilium's. */
const QUERY_HEAD = new DnsHead('', SEP + '0');
const TYPE_A = new DnsHead('A', '');
const TYPE_AAAA = new DnsHead('AAAA', '');
const responseHeads = new Map<string, DnsHead[]>();
/** A response's `rcode` (Cilium's name) and `ips_returned`, made once per pair (rcodes are 12 bits: at most 4 096 of them). */
function responseHead(rcode: string, ips: number): DnsHead {
  let byN = responseHeads.get(rcode);
  if (byN === undefined) responseHeads.set(rcode, (byN = []));
  return (byN[ips] ??= new DnsHead(RCODE_NAMES[rcode] ?? cleanLabelValue(rcode), SEP + String(ips)));
}

/** hubble_drop_total's reason: Cilium's where ours means the same, else our (kernel or PktMon) name. */
export function dropReason(reason: string): string {
  if (reason === 'NETFILTER_DROP') return 'POLICY_DENIED';
  return reason || 'DROP_REASON_UNKNOWN';
}

const hubbleVerdict = (f: Readonly<Flow>): string => (f.verdict === 'DROPPED' ? 'DROPPED' : 'FORWARDED');
const VERDICT_CODE: Readonly<Record<Flow['verdict'], number>> = { FORWARDED: 0, DROPPED: 1, RETRANSMISSION: 2, DNS: 3 };
const OBSERVATION_CODE: Readonly<Record<string, number>> = { UNKNOWN: 0, TO_ENDPOINT: 1, FROM_ENDPOINT: 2, TO_NETWORK: 3, FROM_NETWORK: 4, TO_STACK: 5 };
const tcpPrefixes = (family: string): readonly [Prefix, Prefix, Prefix, Prefix] =>
  [new Prefix(`FIN${SEP}${family}`), new Prefix(`SYN${SEP}${family}`), new Prefix(`SYN-ACK${SEP}${family}`), new Prefix(`RST${SEP}${family}`)];
const fqdn = (n: string): string => (n === '' || n.endsWith('.') ? n : n + '.');
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const IPV6 = /^[0-9a-fA-F:.]+$/;
const isIpAnswer = (a: string): 4 | 6 | 0 => (IPV4.test(a) ? 4 : a.includes(':') && IPV6.test(a) ? 6 : 0);

/**
 * A family's fixed label values (SEP-joined), made once, with the series each tail reached under
 * them: a flow finds its series with one identity-keyed Map read. The indexes are good while the
 * family removed nothing and the context's memos were not dropped (then they are forgotten).
 */
class Prefix {
  readonly byTail = new Map<Tail, number>();
  removals = 0;
  generation = 0;
  constructor(readonly s: string) {}
}

/** Adds `delta` to the series of (prefix, tail) in `fam`, through the prefix's cached index. */
function addTo(fam: SeriesFamily, ctx: HubbleContext, p: Prefix, tail: Tail, delta: number, now: number): void {
  if (p.removals !== fam.removals.n || p.generation !== ctx.generation || p.byTail.size > 65_536) {
    p.byTail.clear();
    p.removals = fam.removals.n;
    p.generation = ctx.generation;
  }
  let i = p.byTail.get(tail);
  if (i === undefined) {
    i = fam.index(p.s, tail.s, now);
    // The overflow series' index is not kept: each new label set past the budget must be counted.
    if (!fam.isOverflow(i)) p.byTail.set(tail, i);
  }
  fam.values[i] = (fam.values[i] as number) + delta;
}

/** One entry's handler: which flows it counts, into which of its families, with which fixed labels. */
interface Handler {
  readonly families: readonly SeriesFamily[];
  readonly ctx: HubbleContext;
  count(f: Readonly<Flow>, now: number): void;
}

export function createHubbleMetrics(o: HubbleMetricsOptions): HubbleMetrics {
  const now = o.now ?? Date.now;
  const maxSeries = o.maxSeriesPerMetric ?? 50_000;
  const reserved: Reserved = { nodeName: o.nodeName, isApiServer: o.isApiServer };
  const podKeys = (o.podLabels ?? []).map((p) => p.key);
  const podNames = (o.podLabels ?? []).map((p) => p.name);
  const handlers: Handler[] = [];

  const family = (def: MetricDef, extra: readonly string[], ctx: HubbleContext): SeriesFamily => new SeriesFamily({
    name: def.name, help: def.help, type: 'counter', labelNames: [...def.labels, ...extra, ...ctx.names], fixedLabels: def.labels.length + extra.length,
    maxSeries, ...(o.onOverflow ? { onOverflow: (n: number) => o.onOverflow?.(def.name, n) } : {}),
  });

  const contexts = new Map<string, HubbleContext>();
  for (const m of o.metrics) {
    const sig = HubbleContext.signature(m);
    let ctx = contexts.get(sig);
    if (ctx === undefined) contexts.set(sig, (ctx = new HubbleContext(m, podKeys, podNames, reserved, 4 * maxSeries + 65_536)));
    switch (m.name) {
      case 'flow': {
        const fam = family(hubbleFlowsProcessed, [], ctx);
        const prefixes = new Map<number, Prefix>();
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            const key = (f.proto & 0xff) | (VERDICT_CODE[f.verdict] << 8) | ((OBSERVATION_CODE[f.observationPoint] ?? 0) << 10) | (f.dns ? 1 << 14 : 0);
            let prefix = prefixes.get(key);
            if (prefix === undefined) {
              const type = f.verdict === 'DROPPED' ? 'Drop' : f.verdict === 'DNS' ? 'L7' : 'Trace';
              const subtype = type === 'Trace' ? TRACE_SUBTYPE[f.observationPoint] ?? 'to-endpoint' : type === 'L7' && f.dns ? 'DNS' : '';
              prefixes.set(key, (prefix = new Prefix(flowProtocol(f) + SEP + type + SEP + subtype + SEP + hubbleVerdict(f))));
            }
            addTo(fam, ctx, prefix, ctx.tail(f), 1, t);
          },
        });
        break;
      }
      case 'drop': {
        const fam = family(hubbleDrop, [], ctx);
        const prefixes = new Map<string, Map<number, Prefix>>();
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            if (f.verdict !== 'DROPPED') return;
            let byProto = prefixes.get(f.dropReason);
            if (byProto === undefined) prefixes.set(f.dropReason, (byProto = new Map()));
            let prefix = byProto.get(f.proto);
            if (prefix === undefined) byProto.set(f.proto, (prefix = new Prefix(cleanLabelValue(dropReason(f.dropReason)) + SEP + flowProtocol(f))));
            addTo(fam, ctx, prefix, ctx.tail(f), f.packets || 1, t);
          },
        });
        break;
      }
      case 'tcp': {
        const fam = family(hubbleTcpFlags, [], ctx);
        const p4 = tcpPrefixes('IPv4');
        const p6 = tcpPrefixes('IPv6');
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            // FORWARDED only, as Cilium; a retransmission is another event of a packet already counted.
            if (f.verdict !== 'FORWARDED' || f.proto !== 6) return;
            const p = f.ipVersion === 6 ? p6 : p4;
            const c = f.tcpFlagCounts;
            let fin: number; let syn: number; let synack: number; let rst: number;
            if (c !== undefined) {
              fin = c[0] ?? 0;
              syn = c[1] ?? 0;
              synack = c[2] ?? 0;
              rst = c[3] ?? 0;
            } else {
              const n = f.packets || 1;
              const b = f.tcpFlags;
              fin = b & 1 ? n : 0;
              syn = b & 2 && !(b & 16) ? n : 0;
              synack = b & 2 && b & 16 ? n : 0;
              rst = b & 4 ? n : 0;
            }
            const tail = ctx.tail(f);
            if (fin) addTo(fam, ctx, p[0], tail, fin, t);
            if (syn) addTo(fam, ctx, p[1], tail, syn, t);
            if (synack) addTo(fam, ctx, p[2], tail, synack, t);
            if (rst) addTo(fam, ctx, p[3], tail, rst, t);
          },
        });
        break;
      }
      case 'dns': {
        const query = m.flags.has('query');
        const ignoreAAAA = m.flags.has('ignoreaaaa');
        const extra = query ? ['query'] : [];
        const queries = family(hubbleDnsQueries, extra, ctx);
        const responses = family(hubbleDnsResponses, extra, ctx);
        const types = family(hubbleDnsResponseTypes, extra, ctx);
        // Prefixes by their parts (no string built per message): `head` is rcode and ips_returned, or the record type.
        const prefixes = new Map<DnsHead, Map<string, Map<string, Prefix>>>();
        const prefixOf = (head: DnsHead, qtype: string, name: string): Prefix => {
          let byType = prefixes.get(head);
          if (byType === undefined) prefixes.set(head, (byType = new Map()));
          let byName = byType.get(qtype);
          if (byName === undefined) byType.set(qtype, (byName = new Map()));
          const key = query ? name : '';
          let p = byName.get(key);
          if (p === undefined) {
            if (byName.size >= 65_536) byName.clear();
            byName.set(key, (p = new Prefix(head.lead + SEP + cleanLabelValue(qtype) + head.trail + (query ? SEP + cleanLabelValue(fqdn(name)) : ''))));
          }
          return p;
        };
        handlers.push({
          families: [queries, responses, types], ctx,
          count(f, t) {
            const d = f.dns;
            if (f.verdict !== 'DNS' || d === undefined) return;
            if (ignoreAAAA && d.qtype === 'AAAA') return;
            const tail = ctx.tail(f);
            if (!d.isResponse) {
              addTo(queries, ctx, prefixOf(QUERY_HEAD, d.qtype, d.query), tail, 1, t);
              return;
            }
            let v4 = 0;
            let v6 = 0;
            for (const a of d.answers) {
              const k = isIpAnswer(a);
              if (k === 4) v4++;
              else if (k === 6) v6++;
            }
            addTo(responses, ctx, prefixOf(responseHead(d.rcode, v4 + v6), d.qtype, d.query), tail, 1, t);
            // Our DNS records carry the answers' addresses, not their record types: A and AAAA from the addresses.
            if (v4) addTo(types, ctx, prefixOf(TYPE_A, d.qtype, d.query), tail, v4, t);
            if (v6) addTo(types, ctx, prefixOf(TYPE_AAAA, d.qtype, d.query), tail, v6, t);
          },
        });
        break;
      }
      case 'port-distribution': {
        const fam = family(hubblePortDistribution, [], ctx);
        const prefixes = new Map<number, Prefix>();
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            if (f.verdict !== 'FORWARDED' || f.isReply !== false) return;
            const p = f.proto;
            const l4 = p === 6 || p === 17 || p === 132;
            if (!l4 && p !== 1 && p !== 58) return;
            const key = p * 65_536 + (l4 ? f.dstPort : 0);
            let prefix = prefixes.get(key);
            if (prefix === undefined) prefixes.set(key, (prefix = new Prefix(flowProtocol(f) + SEP + (l4 ? String(f.dstPort) : '0'))));
            addTo(fam, ctx, prefix, ctx.tail(f), 1, t);
          },
        });
        break;
      }
      case 'flows-to-world': {
        const anyDrop = m.flags.has('any-drop');
        const withPort = m.flags.has('port');
        const synOnly = m.flags.has('syn-only');
        const fam = family(hubbleFlowsToWorld, withPort ? ['port'] : [], ctx);
        const prefixes = new Map<number, Prefix>();
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            const p = f.proto;
            if (f.verdict === 'DNS' || !(p === 6 || p === 17 || p === 132 || p === 1 || p === 58)) return;
            if (reservedOf(f.destination, f.dstIp, reserved) !== WORLD) return;
            const dropped = f.verdict === 'DROPPED';
            if (dropped && !anyDrop && dropReason(f.dropReason) !== 'POLICY_DENIED') return;
            const reply = f.isReply === true;
            if (!dropped && reply) return;
            if (synOnly && (p !== 6 || !(f.tcpFlags & 2) || reply)) return;
            const l4 = p === 6 || p === 17 || p === 132;
            const key = (p * 65_536 + (withPort && l4 ? f.dstPort : 0)) * 2 + (dropped ? 1 : 0);
            let prefix = prefixes.get(key);
            if (prefix === undefined) prefixes.set(key, (prefix = new Prefix(flowProtocol(f) + SEP + hubbleVerdict(f) + (withPort ? SEP + (l4 ? String(f.dstPort) : '') : ''))));
            addTo(fam, ctx, prefix, ctx.tail(f), 1, t);
          },
        });
        break;
      }
    }
  }

  const all = handlers.flatMap((h) => h.families);
  for (const f of all) o.registry.attach(f);

  function* forgetPodsInSteps(gone: GonePods, step: number): Generator<void, number, void> {
    if (!gone.pods.length && !gone.names.length && !gone.ips.length) return 0;
    const sets = goneSets(gone);
    const nsnames = new Set(gone.pods.map((p) => `${p.namespace}/${p.name}`));
    let n = 0;
    for (const h of handlers) {
      if (!h.ctx.checks.length) continue;
      const match = (tail: string): boolean => tailOfGonePod(tail.split(SEP), h.ctx.checks, sets, nsnames);
      for (const fam of h.families) n += yield* fam.removeTailsInSteps(match, step);
    }
    return n;
  }

  const ctxs = [...contexts.values()];
  return {
    consume(batch: FlowBatch): void {
      const t = now();
      for (const c of ctxs) c.newBatch();
      for (const f of batch.flows) {
        for (const h of handlers) h.count(f, t);
      }
    },
    families: () => [...all],
    forgetPods: (gone) => drain(forgetPodsInSteps(gone, Infinity)),
    forgetPodsInSteps,
    [Symbol.dispose]() {
      for (const f of all) o.registry.detach(f.name);
    },
  };
}

function tailOfGonePod(values: readonly string[], checks: readonly PodCheck[], gone: GoneSets, nsnames: ReadonlySet<string>): boolean {
  for (const c of checks) {
    const v = values[c.at] ?? '';
    switch (c.kind) {
      case 'nsname': if (nsnames.has(v)) return true; break;
      case 'name': if (gone.names.has(v)) return true; break;
      case 'ip': if (gone.ips.has(v)) return true; break;
      case 'pair': if (gone.pods.has((values[c.ns] ?? '') + SEP + v)) return true; break;
    }
  }
  return false;
}
