/**
 * What each configured metric counts: which flows it takes, its fixed labels, and how much each
 * flow adds. Fixed label values come out as a key prefix (values joined by SEP).
 */
import type { Flow } from '../../flow/index.js';
import * as c from '../catalog.js';
import { SEP, cleanLabelValue } from '../series.js';

export interface Kind {
  readonly def: c.MetricDef;
  /** True when the fixed labels include `direction` (local context then splits per side). */
  readonly directional: boolean;
  accepts(f: Readonly<Flow>): boolean;
  /** Calls `emit` with each fixed-label prefix this flow contributes to (one, or one per TCP flag). */
  prefixes(f: Readonly<Flow>, direction: string, emit: (prefix: string) => void): void;
  delta(f: Readonly<Flow>): number;
}

const packets = (f: Readonly<Flow>): number => f.packets;
const bytes = (f: Readonly<Flow>): number => f.bytes;
const one = (): number => 1;

function simple(def: c.MetricDef, verdict: Flow['verdict'], delta: (f: Readonly<Flow>) => number): Kind {
  return { def, directional: true, accepts: (f) => f.verdict === verdict, prefixes: (_f, dir, emit) => emit(dir), delta };
}

function drop(def: c.MetricDef, delta: (f: Readonly<Flow>) => number): Kind {
  return {
    def, directional: true, delta,
    accepts: (f) => f.verdict === 'DROPPED',
    prefixes: (f, dir, emit) => emit(cleanLabelValue(f.dropReason || 'UNKNOWN') + SEP + dir),
  };
}

/** TCP flag bits in Flow.tcpFlags and Retina's label values; SYN with ACK counts as SYNACK. */
const FLAGS: readonly [number, string][] = [
  [0x001, 'FIN'], [0x004, 'RST'], [0x008, 'PSH'], [0x010, 'ACK'], [0x020, 'URG'], [0x040, 'ECE'], [0x080, 'CWR'], [0x100, 'NS'],
];

const tcpFlags: Kind = {
  def: c.advTcpFlagsCount, directional: false, delta: packets,
  accepts: (f) => f.verdict === 'FORWARDED' && f.proto === 6 && f.tcpFlags !== 0,
  prefixes(f, _dir, emit) {
    const fl = f.tcpFlags;
    if (fl & 0x002) emit(fl & 0x010 ? 'SYNACK' : 'SYN');
    for (const [bit, name] of FLAGS) {
      if (bit === 0x010 && fl & 0x002) continue; // the ACK of a SYN-ACK is in SYNACK
      if (fl & bit) emit(name);
    }
  },
};

const dnsRequest: Kind = {
  def: c.advDnsRequestCount, directional: false, delta: one,
  accepts: (f) => f.verdict === 'DNS' && f.dns !== undefined && !f.dns.isResponse,
  prefixes: (f, _d, emit) => emit(cleanLabelValue(f.dns?.qtype ?? '') + SEP + cleanLabelValue(f.dns?.query ?? '')),
};

const dnsResponse: Kind = {
  def: c.advDnsResponseCount, directional: false, delta: one,
  accepts: (f) => f.verdict === 'DNS' && f.dns !== undefined && f.dns.isResponse,
  prefixes(f, _d, emit) {
    const d = f.dns;
    if (!d) return;
    emit([d.rcode, d.qtype, d.query, d.answers.join(','), String(d.numAnswers)].map(cleanLabelValue).join(SEP));
  },
};

/** metricName in the MetricsConfiguration → what it counts. Names Retina accepts but never fills map to nothing. */
export const KINDS: Readonly<Record<string, Kind>> = {
  forward_count: simple(c.advForwardCount, 'FORWARDED', packets),
  forward_bytes: simple(c.advForwardBytes, 'FORWARDED', bytes),
  drop_count: drop(c.advDropCount, packets),
  drop_bytes: drop(c.advDropBytes, bytes),
  tcp_flag_gauges: tcpFlags,
  tcp_retransmission_count: simple(c.advTcpRetransCount, 'RETRANSMISSION', packets),
  dns_request_count: dnsRequest,
  dns_response_count: dnsResponse,
};
