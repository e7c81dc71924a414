/**
 * What each configured metric counts: the verdict of the flows it takes, its fixed labels, and
 * how much each flow adds (`op`, interpreted by aggregate.ts in one switch, so the hot path makes
 * no per-metric closure calls). Fixed label values come out as a key prefix (values joined by SEP).
 */
import type { DnsInfo, Verdict } from '../../flow/index.js';
import * as c from '../catalog.js';
import { SEP, cleanLabelValue } from '../series.js';

/** + flow.packets, prefix = direction. */
export const OP_PACKETS = 0;
/** + flow.bytes, prefix = direction. */
export const OP_BYTES = 1;
/** + flow.packets, prefix = reason, direction. */
export const OP_DROP_PACKETS = 2;
/** + flow.bytes, prefix = reason, direction. */
export const OP_DROP_BYTES = 3;
/** Per TCP flag: + that flag's packets (tcpFlagCounts), or + flow.packets per flag set in tcpFlags. */
export const OP_FLAGS = 4;
/** + 1 per DNS query, prefix = query_type, query. */
export const OP_DNS_REQUEST = 5;
/** + 1 per DNS response, prefix = return_code, query_type, query, response, num_response. */
export const OP_DNS_RESPONSE = 6;

export interface Kind {
  readonly def: c.MetricDef;
  readonly verdict: Verdict;
  readonly op: number;
  /** True when the fixed labels include `direction` (local context then counts each pod side). */
  readonly directional: boolean;
}

/** How the module counts each flow-counted `adv_*` family: the verdict it takes and the op. */
interface Counting {
  readonly verdict: Verdict;
  readonly op: number;
}
const COUNTING: ReadonlyMap<c.MetricDef, Counting> = new Map<c.MetricDef, Counting>([
  [c.advForwardCount, { verdict: 'FORWARDED', op: OP_PACKETS }],
  [c.advForwardBytes, { verdict: 'FORWARDED', op: OP_BYTES }],
  [c.advDropCount, { verdict: 'DROPPED', op: OP_DROP_PACKETS }],
  [c.advDropBytes, { verdict: 'DROPPED', op: OP_DROP_BYTES }],
  [c.advTcpFlagsCount, { verdict: 'FORWARDED', op: OP_FLAGS }],
  [c.advTcpRetransCount, { verdict: 'RETRANSMISSION', op: OP_PACKETS }],
  [c.advDnsRequestCount, { verdict: 'DNS', op: OP_DNS_REQUEST }],
  [c.advDnsResponseCount, { verdict: 'DNS', op: OP_DNS_RESPONSE }],
]);

/** The `adv_*` families that are not made from flows (the API-server latency module fills them). */
export const NOT_FROM_FLOWS: ReadonlySet<c.MetricDef> = new Set([c.advNodeApiserverLatency, c.advNodeApiserverTcpHandshakeLatency, c.advNodeApiserverNoResponse]);

/**
 * metricName in the MetricsConfiguration → what it counts, derived from the catalog's one table
 * (`advancedFamilies`, name → families): a name whose one family the module counts from flows gets
 * that family's kind. Names Retina accepts but never fills, and the API-server names, map to nothing.
 */
export const KINDS: Readonly<Record<string, Kind>> = Object.freeze(
  Object.fromEntries(
    Object.entries(c.advancedFamilies).flatMap(([name, fams]) => {
      const how = fams.length === 1 ? COUNTING.get(fams[0]!) : undefined;
      if (how === undefined) return [];
      const def = fams[0]!;
      return [[name, { def, verdict: how.verdict, op: how.op, directional: def.labels.includes('direction') }]];
    }),
  ),
);

/** How many cached series slots a metric of this op needs per context tail. */
export function slotCount(op: number, remote: boolean): number {
  if (op === OP_PACKETS || op === OP_BYTES || op === OP_DROP_PACKETS || op === OP_DROP_BYTES) return remote ? 3 : 2;
  if (op === OP_FLAGS) return 10;
  return 0;
}

export function dnsRequestPrefix(d: DnsInfo): string {
  return cleanLabelValue(d.qtype) + SEP + cleanLabelValue(d.query);
}

export function dnsResponsePrefix(d: DnsInfo): string {
  return [d.rcode, d.qtype, d.query, d.answers.join(','), String(d.numAnswers)].map(cleanLabelValue).join(SEP);
}
