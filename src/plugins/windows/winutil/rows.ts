/**
 * iphlpapi readings → the linuxutil families, under linuxutil's statistic names where Windows has
 * the same counter: Tcp counters of both address families summed (Linux's Tcp: section counts IPv4
 * and IPv6 together), Ip/Udp per family (IPv6 under Linux's Ip6 and Udp6 names), interface counters
 * under the /sys/class/net statistics names. Pure: tested on recorded values.
 */
import type { IfRow, StatsRecord } from '../../../ffi/windows/index.js';
import type { Row } from '../owned-series.js';

/** MIB_TCP_STATE (1..12) → Linux's state name; DELETE_TCB (12) has none and is left out. */
export const TCP_STATE_NAMES: readonly (string | undefined)[] = [
  undefined, 'CLOSE', 'LISTEN', 'SYN_SENT', 'SYN_RECV', 'ESTABLISHED', 'FIN_WAIT1', 'FIN_WAIT2', 'CLOSE_WAIT', 'CLOSING', 'LAST_ACK', 'TIME_WAIT', undefined,
];

const TCP: readonly (readonly [string, string])[] = [
  ['ActiveOpens', 'dwActiveOpens'], ['PassiveOpens', 'dwPassiveOpens'], ['AttemptFails', 'dwAttemptFails'], ['EstabResets', 'dwEstabResets'],
  ['CurrEstab', 'dwCurrEstab'], ['InSegs', 'dwInSegs'], ['OutSegs', 'dwOutSegs'], ['RetransSegs', 'dwRetransSegs'], ['InErrs', 'dwInErrs'], ['OutRsts', 'dwOutRsts'],
];
const IP: readonly (readonly [string, string, string])[] = [
  ['InReceives', 'Ip6InReceives', 'dwInReceives'], ['InHdrErrors', 'Ip6InHdrErrors', 'dwInHdrErrors'], ['InAddrErrors', 'Ip6InAddrErrors', 'dwInAddrErrors'],
  ['ForwDatagrams', 'Ip6OutForwDatagrams', 'dwForwDatagrams'], ['InUnknownProtos', 'Ip6InUnknownProtos', 'dwInUnknownProtos'], ['InDiscards', 'Ip6InDiscards', 'dwInDiscards'],
  ['InDelivers', 'Ip6InDelivers', 'dwInDelivers'], ['OutRequests', 'Ip6OutRequests', 'dwOutRequests'], ['OutDiscards', 'Ip6OutDiscards', 'dwOutDiscards'],
  ['OutNoRoutes', 'Ip6OutNoRoutes', 'dwOutNoRoutes'], ['ReasmFails', 'Ip6ReasmFails', 'dwReasmFails'], ['FragFails', 'Ip6FragFails', 'dwFragFails'],
];
const UDP: readonly (readonly [string, string, string])[] = [
  ['InDatagrams', 'Udp6InDatagrams', 'dwInDatagrams'], ['NoPorts', 'Udp6NoPorts', 'dwNoPorts'], ['InErrors', 'Udp6InErrors', 'dwInErrors'], ['OutDatagrams', 'Udp6OutDatagrams', 'dwOutDatagrams'],
];
/** interface_stats names (as /sys/class/net/<if>/statistics) → MIB_IF_ROW2 counters added up. */
export const IF_STATS: readonly (readonly [string, readonly string[]])[] = [
  ['rx_bytes', ['InOctets']], ['rx_dropped', ['InDiscards']], ['rx_errors', ['InErrors']], ['rx_packets', ['InUcastPkts', 'InNUcastPkts']],
  ['tx_bytes', ['OutOctets']], ['tx_dropped', ['OutDiscards']], ['tx_errors', ['OutErrors']], ['tx_packets', ['OutUcastPkts', 'OutNUcastPkts']],
];

export const IF_TYPE_SOFTWARE_LOOPBACK = 24;
const FILTER_INTERFACE = 0x2;

export interface WinutilInputs {
  readonly tcpStates?: readonly number[] | undefined;
  readonly tcp4?: StatsRecord | undefined;
  readonly tcp6?: StatsRecord | undefined;
  readonly ip4?: StatsRecord | undefined;
  readonly ip6?: StatsRecord | undefined;
  readonly udp4?: StatsRecord | undefined;
  readonly udp6?: StatsRecord | undefined;
  readonly interfaces?: readonly IfRow[] | undefined;
}

export interface WinutilRows {
  readonly tcpState: Row[];
  readonly tcpConnectionStats: Row[];
  readonly ipConnectionStats: Row[];
  readonly udpConnectionStats: Row[];
  readonly interfaceStats: Row[];
}

const v = (r: StatsRecord | undefined, f: string): number => r?.[f] ?? 0;

export function winutilRows(i: WinutilInputs): WinutilRows {
  const tcpState: Row[] = [];
  if (i.tcpStates) TCP_STATE_NAMES.forEach((state, n) => state && tcpState.push([{ state }, i.tcpStates?.[n] ?? 0]));
  const tcpConnectionStats: Row[] = i.tcp4 || i.tcp6 ? TCP.map(([name, f]): Row => [{ statistic_name: name }, v(i.tcp4, f) + v(i.tcp6, f)]) : [];
  const perFamily = (list: typeof IP, r4: StatsRecord | undefined, r6: StatsRecord | undefined): Row[] => [
    ...(r4 ? list.map(([name, , f]): Row => [{ statistic_name: name }, v(r4, f)]) : []),
    ...(r6 ? list.map(([, name, f]): Row => [{ statistic_name: name }, v(r6, f)]) : []),
  ];
  const udp = perFamily(UDP, i.udp4, i.udp6);
  if (i.udp4 || i.udp6) udp.unshift([{ statistic_name: 'ACTIVE' }, v(i.udp4, 'dwNumAddrs') + v(i.udp6, 'dwNumAddrs')]);
  const interfaceStats: Row[] = [];
  const ifs = (i.interfaces ?? []).filter((r) => r.type !== IF_TYPE_SOFTWARE_LOOPBACK && !(r.flags & FILTER_INTERFACE));
  for (const r of [...ifs].sort((a, b) => (a.alias < b.alias ? -1 : a.alias > b.alias ? 1 : 0))) {
    for (const [stat, fields] of IF_STATS) interfaceStats.push([{ interface_name: r.alias, statistic_name: stat }, fields.reduce((s, f) => s + (r.counters[f] ?? 0), 0)]);
  }
  return { tcpState, tcpConnectionStats, ipConnectionStats: perFamily(IP, i.ip4, i.ip6), udpConnectionStats: udp, interfaceStats };
}
