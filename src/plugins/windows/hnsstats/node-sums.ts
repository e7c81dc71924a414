/**
 * Node series as sums over every endpoint (Retina sets each gauge once per endpoint, so the node
 * shows only the last endpoint's counters). Sums are exact (BigInt) and become numbers only here,
 * when they are published.
 */
import type { Row } from '../owned-series.js';
import type { EndpointStats, VfpCounters, VfpDirection, VfpField } from '../../../ffi/windows/index.js';

export interface EndpointReading {
  readonly id: string;
  readonly ip: string;
  readonly stats: EndpointStats;
  /** Undefined when the endpoint has no VFP port or vfpctrl failed for it. */
  readonly vfp?: VfpCounters | undefined;
}

export interface NodeRows {
  readonly forwardCount: readonly Row[];
  readonly forwardBytes: readonly Row[];
  readonly dropCount: readonly Row[];
  readonly windowsHnsStats: readonly Row[];
  readonly tcpConnectionStats: readonly Row[];
  readonly tcpFlagGauges: readonly Row[];
}

/** tcp_connection_stats' statistic_name (Retina's) → VFP counter, summed over both directions. */
export const TCP_CONNECTION_STATS: readonly (readonly [string, VfpField])[] = [
  ['ResetCount', 'reset'], ['ClosedFin', 'closedByFin'], ['ResetSyn', 'resetBySyn'], ['TcpHalfOpenTimeouts', 'halfOpenTimeouts'],
  ['Verified', 'verified'], ['TimedOutCount', 'timedOut'], ['TimeWaitExpiredCount', 'timeWaitExpired'],
];
const FLAGS: readonly (readonly [string, VfpField])[] = [['SYN', 'syn'], ['SYNACK', 'synAck'], ['FIN', 'fin'], ['RST', 'rst']];

const sum = (list: readonly EndpointReading[], f: (r: EndpointReading) => bigint | undefined): bigint => {
  let s = 0n;
  for (const r of list) s += f(r) ?? 0n;
  return s;
};
const vfpSum = (list: readonly EndpointReading[], dir: 'in' | 'out', field: VfpField): bigint => sum(list, (r) => (r.vfp?.[dir] as VfpDirection | undefined)?.[field]);

export function nodeRows(list: readonly EndpointReading[]): NodeRows {
  const withVfp = list.filter((r) => r.vfp);
  const n = Number;
  const dirs = [['ingress', 'in'], ['egress', 'out']] as const;
  return {
    forwardCount: [
      [{ direction: 'ingress' }, n(sum(list, (r) => r.stats.packetsReceived))],
      [{ direction: 'egress' }, n(sum(list, (r) => r.stats.packetsSent))],
    ],
    forwardBytes: [
      [{ direction: 'ingress' }, n(sum(list, (r) => r.stats.bytesReceived))],
      [{ direction: 'egress' }, n(sum(list, (r) => r.stats.bytesSent))],
    ],
    dropCount: [
      [{ reason: 'endpoint', direction: 'ingress' }, n(sum(list, (r) => r.stats.droppedIncoming))],
      [{ reason: 'endpoint', direction: 'egress' }, n(sum(list, (r) => r.stats.droppedOutgoing))],
      ...(withVfp.length ? dirs.map(([direction, d]): Row => [{ reason: 'aclrule', direction }, n(vfpSum(withVfp, d, 'aclDrops'))]) : []),
    ],
    windowsHnsStats: [
      [{ direction: 'win_packets_recv_count' }, n(sum(list, (r) => r.stats.packetsReceived))],
      [{ direction: 'win_packets_sent_count' }, n(sum(list, (r) => r.stats.packetsSent))],
    ],
    tcpConnectionStats: withVfp.length
      ? TCP_CONNECTION_STATS.map(([name, f]): Row => [{ statistic_name: name }, n(vfpSum(withVfp, 'in', f) + vfpSum(withVfp, 'out', f))])
      : [],
    tcpFlagGauges: withVfp.length ? dirs.flatMap(([direction, d]) => FLAGS.map(([flag, f]): Row => [{ direction, flag }, n(vfpSum(withVfp, d, f))])) : [],
  };
}
