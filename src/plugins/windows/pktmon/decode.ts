/**
 * PktMon ETW packet events, pure: the user data of events 160 (FramePayload) and 170
 * (FrameDropPayload) of Microsoft-Windows-PktMon into Flows. Layout (windows.md A.7, from the
 * provider's published NetMon parser, checked against real captures in
 * test/fixtures/windows/real/): PktGroupId u64 | PktNumber u16 | AppearanceCount u16 | DirTag u16 |
 * PacketType u16 | ComponentId u16 | EdgeId u16 | FilterId u16 | DropReason u32 | DropLocation u32 |
 * OriginalPayloadSize u16 | LoggedPayloadSize u16 (34 bytes, little-endian), then the logged frame
 * (network order). PacketType 1 is an Ethernet frame, 3 a bare IP packet (no link header, as
 * etl2pcapng and Retina's eBPF-for-Windows parser read it); both become flows when they carry
 * IPv4/IPv6. Others (2 WiFi, …) give no flow. One event is one *appearance* of a packet at one
 * component: merge.ts makes one Flow per packet out of them.
 */
import { ipv4At, ipv6At, newFlow, type Flow, type TrafficDirection } from '../../../flow/index.js';
import { dropReasonName } from './drop-reasons.js';

export const EVENT_FRAME = 160;
export const EVENT_FRAME_DROP = 170;
export const HEADER_SIZE = 34;
export const PACKET_ETHERNET = 1;
export const PACKET_IP = 3;
/** FILETIME of the Unix epoch (100 ns ticks since 1601). */
const FILETIME_UNIX = 116_444_736_000_000_000n;

/**
 * DirTag (1 In, 2 Out, 3 Rx, 4 Tx, 5 Ingress, 6 Egress) as a direction from the endpoint's side: the
 * one table decode and merge read. PktMon's own counters pair them per component: "In = Rx, Out =
 * Tx" on a NIC or filter, "In = Egress, Out = Ingress" on a vSwitch component (real text from a
 * Server 2022 container host: test/fixtures/windows/real/pktmon-20348-l2bridge-counters.txt). In,
 * Rx and a vSwitch's Egress (out of the switch into a port: the port's pod receives it) are
 * INGRESS; Out, Tx and a vSwitch's Ingress (into the switch from a port: its pod sent it) EGRESS.
 */
const DIRECTIONS: readonly TrafficDirection[] = ['UNKNOWN', 'INGRESS', 'EGRESS', 'INGRESS', 'EGRESS', 'EGRESS', 'INGRESS'];

/** The direction an appearance's DirTag says, from the endpoint's side (UNKNOWN for a tag PktMon has not been seen to log). */
export function dirTagDirection(dirTag: number): TrafficDirection {
  return DIRECTIONS[dirTag] ?? 'UNKNOWN';
}

export interface PktmonHeader {
  readonly dirTag: number;
  readonly packetType: number;
  readonly componentId: number;
  readonly dropReason: number;
  readonly dropLocation: number;
  readonly originalSize: number;
  readonly loggedSize: number;
}

/** The 34-byte header; throws naming the field when the record is too short for it. */
export function decodeHeader(v: DataView): PktmonHeader {
  if (v.byteLength < HEADER_SIZE) throw new Error(`PktMon event user data of ${v.byteLength} bytes, shorter than its ${HEADER_SIZE}-byte header (LoggedPayloadSize at 32)`);
  return {
    dirTag: v.getUint16(12, true),
    packetType: v.getUint16(14, true),
    componentId: v.getUint16(16, true),
    dropReason: v.getUint32(22, true),
    dropLocation: v.getUint32(26, true),
    originalSize: v.getUint16(30, true),
    loggedSize: v.getUint16(32, true),
  };
}

/** Milliseconds since the epoch of an ETW FILETIME stamp. */
export function filetimeToMs(ft: bigint): number {
  return Number(ft - FILETIME_UNIX) / 10_000;
}

/**
 * Where the IP header starts in the logged frame of `v` (after the 34-byte header), and the
 * EtherType-like version it carries, or -1 when the frame is not IP (or not a type we read).
 */
export function ipStart(v: DataView, packetType: number, end: number): number {
  if (packetType === PACKET_IP) return HEADER_SIZE < end ? HEADER_SIZE : -1;
  if (packetType !== PACKET_ETHERNET) return -1;
  let o = HEADER_SIZE + 12;
  if (o + 2 > end) return -1;
  let etherType = v.getUint16(o, false);
  if (etherType === 0x8100 && o + 6 <= end) {
    o += 4;
    etherType = v.getUint16(o, false);
  }
  o += 2;
  return etherType === 0x0800 || etherType === 0x86dd ? o : -1;
}

/**
 * One event's user data into a Flow, or undefined for a frame that is not Ethernet/IP with IPv4/IPv6
 * or too truncated to hold the IP header. Event 170, or a non-zero DropReason, is DROPPED with
 * PktMon's reason name. `bytes` is the frame's original size (the logged part may be truncated);
 * `direction` is this appearance's DirTag (merge.ts sets the packet's).
 */
export function decodeFrameEvent(id: number, timestamp: bigint, data: Uint8Array): Flow | undefined {
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const h = decodeHeader(v);
  const end = Math.min(v.byteLength, HEADER_SIZE + h.loggedSize);
  const o = ipStart(v, h.packetType, end);
  if (o < 0) return undefined;
  const dropped = id === EVENT_FRAME_DROP || h.dropReason !== 0;
  const f = newFlow(dropped ? 'DROPPED' : 'FORWARDED');
  let l4: number;
  const version = v.getUint8(o) >> 4;
  if (version === 4) {
    if (o + 20 > end) return undefined;
    f.ipVersion = 4;
    f.proto = v.getUint8(o + 9);
    f.srcIp = ipv4At(v, o + 12);
    f.dstIp = ipv4At(v, o + 16);
    const ihl = (v.getUint8(o) & 0x0f) * 4;
    // A header length below 20 bytes lies: no transport header to read ports from (they would come from the IP header).
    l4 = ihl >= 20 ? o + ihl : end;
  } else if (version === 6) {
    if (o + 40 > end) return undefined;
    f.ipVersion = 6;
    f.proto = v.getUint8(o + 6);
    f.srcIp = ipv6At(v, o + 8);
    f.dstIp = ipv6At(v, o + 24);
    l4 = o + 40;
  } else {
    return undefined;
  }
  if ((f.proto === 6 || f.proto === 17) && l4 + 4 <= end) {
    f.srcPort = v.getUint16(l4, false);
    f.dstPort = v.getUint16(l4 + 2, false);
    if (f.proto === 6 && l4 + 14 <= end) f.tcpFlags = v.getUint8(l4 + 13) | ((v.getUint8(l4 + 12) & 1) << 8);
  }
  f.timeMs = filetimeToMs(timestamp);
  f.direction = dirTagDirection(h.dirTag);
  if (dropped) f.dropReason = dropReasonName(h.dropReason);
  f.bytes = h.originalSize;
  return f;
}
