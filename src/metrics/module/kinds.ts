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

const kind = (def: c.MetricDef, verdict: Verdict, op: number, directional: boolean): Kind => ({ def, verdict, op, directional });

/** metricName in the MetricsConfiguration → what it counts. Names Retina accepts but never fills map to nothing. */
export const KINDS: Readonly<Record<string, Kind>> = {
  forward_count: kind(c.advForwardCount, 'FORWARDED', OP_PACKETS, true),
  forward_bytes: kind(c.advForwardBytes, 'FORWARDED', OP_BYTES, true),
  drop_count: kind(c.advDropCount, 'DROPPED', OP_DROP_PACKETS, true),
  drop_bytes: kind(c.advDropBytes, 'DROPPED', OP_DROP_BYTES, true),
  tcp_flag_gauges: kind(c.advTcpFlagsCount, 'FORWARDED', OP_FLAGS, false),
  tcp_retransmission_count: kind(c.advTcpRetransCount, 'RETRANSMISSION', OP_PACKETS, true),
  dns_request_count: kind(c.advDnsRequestCount, 'DNS', OP_DNS_REQUEST, false),
  dns_response_count: kind(c.advDnsResponseCount, 'DNS', OP_DNS_RESPONSE, false),
};

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
