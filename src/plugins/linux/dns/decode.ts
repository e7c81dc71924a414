/**
 * dns records, pure. struct dns_event (dns.bpf.c): u64 ts_ns | u32 len | u32 cap_len | u32 ifindex |
 * u16 l3_off | u8 pkt_type | u8 pad | u8 data[1024] (the packet from its link header). The packet is
 * parsed here: IPv4/IPv6 (with extension headers), UDP or TCP (2-byte length prefix), then DNS.
 */
import { newFlow, ipAt, type Flow } from '../../../flow/index.js';
import type { KernelClock } from '../ebpf-shared/clock.js';
import { DnsParseError, dnsRcodeName, dnsTypeName, tryParseDns, type DnsMessage } from './parser.js';

export const DNS_EVENT_HEADER = 24;
export const PACKET_OUTGOING = 4;

export interface DnsRecord {
  readonly tsNs: number;
  readonly ifindex: number;
  readonly outgoing: boolean;
  readonly family: 4 | 6;
  readonly proto: 6 | 17;
  readonly srcIp: string;
  readonly dstIp: string;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly message: DnsMessage;
}

/** Decodes one ring record; throws DnsParseError (naming what is wrong) when it is not a DNS message. */
export function decodeDnsEvent(v: DataView, off: number, size: number): DnsRecord {
  const r = decodeOrWhy(v, off, size);
  if (typeof r === 'string') throw new DnsParseError(r);
  return r;
}

/**
 * Like decodeDnsEvent, but undefined for a packet that is not a DNS message (a TCP continuation,
 * garbage on port 53), without throwing on the way: that is the common case under load.
 */
export function tryDecodeDnsEvent(v: DataView, off: number, size: number): DnsRecord | undefined {
  const r = decodeOrWhy(v, off, size);
  return typeof r === 'string' ? undefined : r;
}

/**
 * Every header is checked against the captured bytes before it is read: a record whose offsets or
 * lengths lie gives a reason, never a read outside [off, off + size).
 */
function decodeOrWhy(v: DataView, off: number, size: number): DnsRecord | string {
  if (size < DNS_EVENT_HEADER) return 'record shorter than its header';
  const cap = Math.min(v.getUint32(off + 12, true), size - DNS_EVENT_HEADER);
  const pkt = off + DNS_EVENT_HEADER;
  const end = pkt + cap;
  const l3 = pkt + v.getUint16(off + 20, true);
  if (l3 >= end) return 'l3_off beyond the captured bytes';
  const ver = v.getUint8(l3) >> 4;
  let l4: number;
  let proto: number;
  let l3end: number;
  if (ver === 4) {
    if (l3 + 20 > end) return 'IPv4 header cut';
    const ihl = (v.getUint8(l3) & 0xf) * 4;
    if (ihl < 20) return 'IPv4 header length below 20 bytes';
    proto = v.getUint8(l3 + 9);
    l4 = l3 + ihl;
    l3end = l3 + v.getUint16(l3 + 2);
  } else if (ver === 6) {
    if (l3 + 40 > end) return 'IPv6 header cut';
    let nh = v.getUint8(l3 + 6);
    l3end = l3 + 40 + v.getUint16(l3 + 4);
    l4 = l3 + 40;
    for (let i = 0; i < 4 && (nh === 0 || nh === 43 || nh === 60); i++) {
      if (l4 + 2 > end) return 'IPv6 extension header cut';
      nh = v.getUint8(l4);
      l4 += (v.getUint8(l4 + 1) + 1) * 8;
    }
    proto = nh;
  } else {
    return 'not IP';
  }
  const msgEnd = Math.min(end, l3end);
  let dns: number;
  if (proto === 17) {
    dns = l4 + 8;
  } else if (proto === 6) {
    if (l4 + 13 > end) return 'TCP header cut';
    const doff = (v.getUint8(l4 + 12) >> 4) * 4;
    if (doff < 20) return 'TCP data offset below 20 bytes';
    dns = l4 + doff + 2; // TCP: a 2-byte length first
  } else {
    return 'not UDP or TCP';
  }
  if (dns >= msgEnd) return 'no DNS payload';
  const message = tryParseDns(v, dns, msgEnd - dns);
  if (typeof message === 'string') return message;
  const family = ver === 6 ? 6 : 4;
  const addrAt = family === 6 ? l3 + 8 : l3 + 12;
  return {
    tsNs: v.getUint32(off, true) + v.getUint32(off + 4, true) * 4294967296,
    ifindex: v.getUint32(off + 16, true),
    outgoing: v.getUint8(off + 22) === PACKET_OUTGOING,
    family,
    proto: proto === 6 ? 6 : 17,
    srcIp: ipAt(v, addrAt, family),
    dstIp: ipAt(v, addrAt + (family === 6 ? 16 : 4), family),
    srcPort: v.getUint16(l4),
    dstPort: v.getUint16(l4 + 2),
    message,
  };
}

/** Requests and responses in a batch. */
export function countMessages(records: readonly DnsRecord[]): { requests: number; responses: number } {
  let responses = 0;
  for (const r of records) if (r.message.isResponse) responses++;
  return { requests: records.length - responses, responses };
}

/** The pod-level flow: queries leave (TO_NETWORK, EGRESS), responses arrive (FROM_NETWORK, INGRESS), as in Retina. */
export function dnsFlow(r: DnsRecord, clock: KernelClock): Flow {
  const m = r.message;
  const q = m.questions[0];
  const answers: string[] = [];
  for (const a of m.answers) if (a.type === 1 || a.type === 28) answers.push(a.data);
  const f = newFlow('DNS');
  f.timeMs = clock.toMs(r.tsNs);
  f.srcIp = r.srcIp;
  f.dstIp = r.dstIp;
  f.ipVersion = r.family;
  f.proto = r.proto;
  f.srcPort = r.srcPort;
  f.dstPort = r.dstPort;
  f.direction = m.isResponse ? 'INGRESS' : 'EGRESS';
  f.observationPoint = m.isResponse ? 'FROM_NETWORK' : 'TO_NETWORK';
  f.dns = {
    query: q ? `${q.name}.` : '',
    qtype: q ? dnsTypeName(q.type) : '',
    rcode: dnsRcodeName(m.rcode),
    answers,
    isResponse: m.isResponse,
    numAnswers: m.answerCount,
  };
  return f;
}
