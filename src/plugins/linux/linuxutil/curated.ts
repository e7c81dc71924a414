/**
 * Which kernel counters become which series, and the pure step from parsed files to metric rows.
 * The lists are curated (bounded, documented in the README); a counter the kernel does not print
 * (an older kernel, IPv6 or MPTCP off) simply has no series. Zero values are emitted.
 */
import type { Sections } from './counters.js';
import { TCP_STATES, type SocketCounts } from './sockets.js';

/** `[section, counter]`; the series' statistic_name is the counter name. */
type Pick = readonly [string, string];

const from = (section: string, names: readonly string[]): Pick[] => names.map((n) => [section, n] as const);

/** Retina's netstatCuratedKeys (TcpExt, MPTcpExt), plus ListenOverflows, plus the snmp Tcp: section. */
export const TCP_STATS: readonly Pick[] = [
  ...from('TcpExt', [
    'ListenOverflows', 'ListenDrops', 'LockDroppedIcmps', 'PFMemallocDrop', 'TCPBacklogDrop', 'TCPDeferAcceptDrop', 'TCPMinTTLDrop',
    'TCPRcvQDrop', 'TCPReqQFullDrop', 'TCPZeroWindowDrop', 'TCPTimeouts', 'TCPLossProbes', 'TCPLostRetransmit',
  ]),
  ...from('MPTcpExt', ['DataCsumErr', 'AddAddrDrop', 'RmAddrDrop']),
  ...from('Tcp', [
    'ActiveOpens', 'PassiveOpens', 'AttemptFails', 'EstabResets', 'CurrEstab', 'InSegs', 'OutSegs', 'RetransSegs', 'InErrs', 'OutRsts',
    'InCsumErrors',
  ]),
];

/** IpExt and the snmp Ip: section; snmp6 Ip6* (its names carry the Ip6 prefix already). */
export const IP_STATS: readonly Pick[] = [
  ...from('IpExt', ['InNoRoutes', 'InTruncatedPkts', 'InOctets', 'OutOctets', 'InCsumErrors', 'InNoECTPkts', 'InECT0Pkts', 'InECT1Pkts', 'InCEPkts']),
  ...from('Ip', [
    'InReceives', 'InHdrErrors', 'InAddrErrors', 'ForwDatagrams', 'InUnknownProtos', 'InDiscards', 'InDelivers', 'OutRequests', 'OutDiscards',
    'OutNoRoutes', 'ReasmFails', 'FragFails',
  ]),
  ...from('Ip6', [
    'Ip6InReceives', 'Ip6InHdrErrors', 'Ip6InAddrErrors', 'Ip6InNoRoutes', 'Ip6InTruncatedPkts', 'Ip6InDiscards', 'Ip6InDelivers',
    'Ip6OutForwDatagrams', 'Ip6OutRequests', 'Ip6OutDiscards', 'Ip6OutNoRoutes', 'Ip6ReasmFails', 'Ip6FragFails', 'Ip6InOctets', 'Ip6OutOctets',
  ]),
];

/** The snmp Udp: section and snmp6 Udp6*; ACTIVE (the socket count) is added separately. */
export const UDP_STATS: readonly Pick[] = [
  ...from('Udp', ['InDatagrams', 'NoPorts', 'InErrors', 'OutDatagrams', 'RcvbufErrors', 'SndbufErrors', 'InCsumErrors']),
  ...from('Udp6', ['Udp6InDatagrams', 'Udp6NoPorts', 'Udp6InErrors', 'Udp6OutDatagrams', 'Udp6RcvbufErrors', 'Udp6SndbufErrors', 'Udp6InCsumErrors']),
];

/** The label value of tcp_connection_remote, as Retina writes it. */
export const ALL_IPS = 'AllIPs';
export const UDP_ACTIVE = 'ACTIVE';

export type Row = readonly [Readonly<Record<string, string>>, number];

export interface ProtocolRows {
  readonly tcpState: readonly Row[];
  readonly tcpConnectionRemote: readonly Row[];
  readonly tcpConnectionStats: readonly Row[];
  readonly ipConnectionStats: readonly Row[];
  readonly udpConnectionStats: readonly Row[];
}

export interface ProtocolInputs {
  /**
   * /proc/net/netstat, /proc/net/snmp and /proc/net/snmp6 (filed by `snmp6Sections` under Ip6,
   * Udp6, …) merged: their section names do not overlap.
   */
  readonly sections: Sections;
  /** tcp + tcp6, udp + udp6 socket counts. */
  readonly tcp?: SocketCounts | undefined;
  readonly udp?: SocketCounts | undefined;
}

/** Turns parsed files into rows; a family whose source is missing gets no rows. */
export function protocolRows(inp: ProtocolInputs): ProtocolRows {
  const { tcp, udp } = inp;
  const tcpState: Row[] = tcp ? TCP_STATES.slice(1).map((state, i) => [{ state }, tcp.byState[i + 1] ?? 0] as const) : [];
  const remote: Row[] = tcp ? [[{ address: ALL_IPS }, tcp.withRemote]] : [];
  const udpRows = picked(UDP_STATS, inp.sections);
  if (udp) udpRows.unshift([{ statistic_name: UDP_ACTIVE }, udp.total]);
  return {
    tcpState,
    tcpConnectionRemote: remote,
    tcpConnectionStats: picked(TCP_STATS, inp.sections),
    ipConnectionStats: picked(IP_STATS, inp.sections),
    udpConnectionStats: udpRows,
  };
}

function picked(list: readonly Pick[], sections: Sections): Row[] {
  const rows: Row[] = [];
  for (const [section, name] of list) {
    const v = sections.get(section)?.get(name);
    if (v !== undefined) rows.push([{ statistic_name: name }, v]);
  }
  return rows;
}

/** Files snmp6's flat names under sections by prefix (Ip6, Icmp6, Udp6, UdpLite6). */
export function snmp6Sections(values: ReadonlyMap<string, number>): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const [name, v] of values) {
    const section = /^[A-Za-z]+?6/.exec(name)?.[0] ?? 'Other6';
    let m = out.get(section);
    if (!m) out.set(section, (m = new Map()));
    m.set(name, v);
  }
  return out;
}
