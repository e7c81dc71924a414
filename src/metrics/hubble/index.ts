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
import { HubbleContext, WORLD, reservedOf, type PodCheck, type Reserved } from './context.js';

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

/** hubble_drop_total's reason: Cilium's where ours means the same, else our (kernel or PktMon) name. */
export function dropReason(reason: string): string {
  if (reason === 'NETFILTER_DROP') return 'POLICY_DENIED';
  return reason || 'DROP_REASON_UNKNOWN';
}

const hubbleVerdict = (f: Readonly<Flow>): string => (f.verdict === 'DROPPED' ? 'DROPPED' : 'FORWARDED');
const fqdn = (n: string): string => (n === '' || n.endsWith('.') ? n : n + '.');
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const isIpAnswer = (a: string): 4 | 6 | 0 => (IPV4.test(a) ? 4 : a.includes(':') && /^[0-9a-fA-F:.]+$/.test(a) ? 6 : 0);

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

  for (const m of o.metrics) {
    const ctx = new HubbleContext(m, podKeys, podNames, reserved);
    switch (m.name) {
      case 'flow': {
        const fam = family(hubbleFlowsProcessed, [], ctx);
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            const type = f.verdict === 'DROPPED' ? 'Drop' : f.verdict === 'DNS' ? 'L7' : 'Trace';
            const subtype = type === 'Trace' ? TRACE_SUBTYPE[f.observationPoint] ?? 'to-endpoint' : type === 'L7' && f.dns ? 'DNS' : '';
            fam.add(flowProtocol(f) + SEP + type + SEP + subtype + SEP + hubbleVerdict(f), ctx.tail(f), 1, t);
          },
        });
        break;
      }
      case 'drop': {
        const fam = family(hubbleDrop, [], ctx);
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            if (f.verdict === 'DROPPED') fam.add(cleanLabelValue(dropReason(f.dropReason)) + SEP + flowProtocol(f), ctx.tail(f), f.packets || 1, t);
          },
        });
        break;
      }
      case 'tcp': {
        const fam = family(hubbleTcpFlags, [], ctx);
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            // FORWARDED only, as Cilium; a retransmission is another event of a packet already counted.
            if (f.verdict !== 'FORWARDED' || f.proto !== 6) return;
            const family4 = f.ipVersion === 6 ? 'IPv6' : 'IPv4';
            const c = f.tcpFlagCounts;
            let fin: number; let syn: number; let synack: number; let rst: number;
            if (c !== undefined) {
              [fin, syn, synack, rst] = [c[0] ?? 0, c[1] ?? 0, c[2] ?? 0, c[3] ?? 0];
            } else {
              const n = f.packets || 1;
              const b = f.tcpFlags;
              fin = b & 1 ? n : 0;
              syn = b & 2 && !(b & 16) ? n : 0;
              synack = b & 2 && b & 16 ? n : 0;
              rst = b & 4 ? n : 0;
            }
            const tail = ctx.tail(f);
            if (fin) fam.add('FIN' + SEP + family4, tail, fin, t);
            if (syn) fam.add('SYN' + SEP + family4, tail, syn, t);
            if (synack) fam.add('SYN-ACK' + SEP + family4, tail, synack, t);
            if (rst) fam.add('RST' + SEP + family4, tail, rst, t);
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
        handlers.push({
          families: [queries, responses, types], ctx,
          count(f, t) {
            const d = f.dns;
            if (f.verdict !== 'DNS' || d === undefined) return;
            if (ignoreAAAA && d.qtype === 'AAAA') return;
            const tail = ctx.tail(f);
            const q = query ? SEP + cleanLabelValue(fqdn(d.query)) : '';
            const qtypes = cleanLabelValue(d.qtype);
            if (!d.isResponse) {
              queries.add('' + SEP + qtypes + SEP + '0' + q, tail, 1, t);
              return;
            }
            let v4 = 0;
            let v6 = 0;
            for (const a of d.answers) {
              const k = isIpAnswer(a);
              if (k === 4) v4++;
              else if (k === 6) v6++;
            }
            const rcode = RCODE_NAMES[d.rcode] ?? cleanLabelValue(d.rcode);
            responses.add(rcode + SEP + qtypes + SEP + String(v4 + v6) + q, tail, 1, t);
            // Our DNS records carry the answers' addresses, not their record types: A and AAAA from the addresses.
            if (v4) types.add('A' + SEP + qtypes + q, tail, v4, t);
            if (v6) types.add('AAAA' + SEP + qtypes + q, tail, v6, t);
          },
        });
        break;
      }
      case 'port-distribution': {
        const fam = family(hubblePortDistribution, [], ctx);
        handlers.push({
          families: [fam], ctx,
          count(f, t) {
            if (f.verdict !== 'FORWARDED' || f.isReply !== false) return;
            const p = f.proto;
            if (p === 6 || p === 17 || p === 132) fam.add(flowProtocol(f) + SEP + String(f.dstPort), ctx.tail(f), 1, t);
            else if (p === 1 || p === 58) fam.add(flowProtocol(f) + SEP + '0', ctx.tail(f), 1, t);
          },
        });
        break;
      }
      case 'flows-to-world': {
        const anyDrop = m.flags.has('any-drop');
        const withPort = m.flags.has('port');
        const synOnly = m.flags.has('syn-only');
        const fam = family(hubbleFlowsToWorld, withPort ? ['port'] : [], ctx);
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
            const port = withPort ? SEP + (p === 6 || p === 17 || p === 132 ? String(f.dstPort) : '') : '';
            fam.add(flowProtocol(f) + SEP + hubbleVerdict(f) + port, ctx.tail(f), 1, t);
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

  return {
    consume(batch: FlowBatch): void {
      const t = now();
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
