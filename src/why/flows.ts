/**
 * The facts `why` reads from one Hubble flow.Flow (as GetFlows sends it, decoded in proto-loader's
 * shape: src/flow/hubble/map.ts writes it): addresses, ports, TCP flags, the verdict with the
 * kernel's drop reason (in Summary, see map.ts), a DNS message, the node that saw it.
 */
import { dropReasonOfSummary, timestampMs, type HubbleFlow } from '../flow/hubble/index.js';

export const SYN = 1;
export const ACK = 2;
export const RST = 4;
export const FIN = 8;

export interface SeenDns {
  /** The query, absolute (ends with a dot), lower case. */
  readonly query: string;
  readonly response: boolean;
  /** The answer's RCODE (0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN, 5 REFUSED, ...); undefined on a query. */
  readonly rcode: number | undefined;
  readonly ips: readonly string[];
}

export interface SeenFlow {
  readonly timeMs: number;
  readonly node: string;
  readonly srcIp: string;
  readonly dstIp: string;
  readonly proto: 'TCP' | 'UDP' | 'ICMP' | 'other';
  readonly srcPort: number;
  readonly dstPort: number;
  /** SYN | ACK | RST | FIN of this file (TCP only). */
  readonly flags: number;
  readonly dropped: boolean;
  /** The kernel's drop reason name ('' when not dropped; 'unknown' when a drop carries none). */
  readonly dropReason: string;
  readonly dns: SeenDns | undefined;
  /** The source's pod as the agent's enricher named it (`ns/name`), '' when it is no pod it knows. */
  readonly srcPod: string;
}

type Obj = Readonly<Record<string, unknown>>;
const obj = (v: unknown): Obj => (v !== null && typeof v === 'object' ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : 0);

function tcpFlags(f: Obj): number {
  return (f['SYN'] ? SYN : 0) | (f['ACK'] ? ACK : 0) | (f['RST'] ? RST : 0) | (f['FIN'] ? FIN : 0);
}

/**
 * One Hubble flow as `why` reads it. `node` is the Kubernetes node of the agent asked (its pod's
 * spec.nodeName), preferred to the flow's node_name, which is the name the agent gave itself.
 */
export function readFlow(h: HubbleFlow, node: string): SeenFlow {
  const ip = obj(h['IP']);
  const l4 = obj(h['l4']);
  const tcp = l4['TCP'] ? obj(l4['TCP']) : undefined;
  const udp = l4['UDP'] ? obj(l4['UDP']) : undefined;
  const ports = tcp ?? udp ?? {};
  const proto = tcp ? 'TCP' : udp ? 'UDP' : l4['ICMPv4'] || l4['ICMPv6'] ? 'ICMP' : 'other';
  const dropped = h['verdict'] === 'DROPPED';
  const l7 = obj(h['l7']);
  const d = l7['dns'] ? obj(l7['dns']) : undefined;
  const query = d ? str(d['query']).toLowerCase() : '';
  const response = l7['type'] === 'RESPONSE';
  const src = obj(h['source']);
  return {
    timeMs: timestampMs(h['time']) ?? 0,
    node: node || str(h['node_name']),
    srcIp: str(ip['source']),
    dstIp: str(ip['destination']),
    proto,
    srcPort: num(ports['source_port']),
    dstPort: num(ports['destination_port']),
    flags: tcp ? tcpFlags(obj(tcp['flags'])) : 0,
    dropped,
    dropReason: dropped ? (dropReasonOfSummary(h['Summary']) ?? (str(h['drop_reason_desc']) || 'unknown')) : '',
    dns: d ? {
      query: query === '' || query.endsWith('.') ? query : `${query}.`,
      response,
      rcode: response ? num(d['rcode']) : undefined,
      ips: Array.isArray(d['ips']) ? d['ips'].map(str).filter(Boolean) : [],
    } : undefined,
    srcPod: src['pod_name'] ? `${str(src['namespace'])}/${str(src['pod_name'])}` : '',
  };
}

const RCODE_NAMES: readonly string[] = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED'];

/** An RCODE's name (`RCODE 9` past the common ones). */
export function rcodeName(rcode: number): string {
  return RCODE_NAMES[rcode] ?? `RCODE ${rcode}`;
}

/** Whether a DNS query for `query` (absolute) asked for `name` (as typed, maybe expanded by a search path). */
export function asksFor(query: string, name: string): boolean {
  const n = name.endsWith('.') ? name : `${name}.`;
  return query === n || query.startsWith(n);
}
