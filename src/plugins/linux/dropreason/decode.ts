/**
 * dropreason records, pure: the per-CPU map's key, the ring buffer's drop event, reason names from
 * the kernel's enum skb_drop_reason, and the flows built from events.
 */
import { createFlow, type Flow } from '../../../flow/index.js';
import { ipAt } from '../ebpf-shared/addr.js';

export const DIRECTIONS: Readonly<Record<number, 'ingress' | 'egress'>> = { 1: 'ingress', 2: 'egress' };

/** struct drop_key { u32 reason; u32 direction; } */
export interface DropKey {
  readonly reason: number;
  readonly direction: number;
}

export function decodeDropKey(b: Uint8Array): DropKey {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { reason: v.getUint32(0, true), direction: v.getUint32(4, true) };
}

/** Names by value, the kernel's prefix removed: 12 → NETFILTER_DROP. Unknown values read REASON_<n>. */
export function reasonNames(kernelEnum: ReadonlyMap<number, string>): (value: number) => string {
  const names = new Map<number, string>();
  for (const [v, n] of kernelEnum) names.set(v, n.replace(/^SKB_DROP_REASON_/, '').replace(/^SKB_/, ''));
  return (value) => names.get(value) ?? `REASON_${value}`;
}

/** struct drop_event (dropreason.bpf.c): 24 bytes, then struct retina_tuple (40 bytes). */
export const DROP_EVENT_SIZE = 64;

export interface DropEvent {
  readonly tsNs: number;
  readonly reason: number;
  readonly direction: number;
  readonly len: number;
  readonly ifindex: number;
  readonly family: number;
  readonly proto: number;
  readonly srcIp: string;
  readonly dstIp: string;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly tcpFlags: number;
}

export function decodeDropEvent(v: DataView, off: number, size: number): DropEvent {
  if (size < DROP_EVENT_SIZE) throw new Error(`drop event of ${size} bytes, expected ${DROP_EVENT_SIZE}`);
  const t = off + 24;
  const family = v.getUint8(t + 36);
  return {
    tsNs: Number(v.getBigUint64(off, true)),
    reason: v.getUint32(off + 8, true),
    direction: v.getUint32(off + 12, true),
    len: v.getUint32(off + 16, true),
    ifindex: v.getUint32(off + 20, true),
    family,
    proto: v.getUint8(t + 37),
    srcIp: family ? ipAt(v, t, family) : '',
    dstIp: family ? ipAt(v, t + 16, family) : '',
    srcPort: v.getUint16(t + 32, true),
    dstPort: v.getUint16(t + 34, true),
    tcpFlags: v.getUint8(t + 38),
  };
}

export function dropFlow(e: DropEvent, reasonName: (n: number) => string): Flow {
  return createFlow({
    srcIp: e.srcIp, dstIp: e.dstIp, ipVersion: e.family === 6 ? 6 : 4, proto: e.proto,
    srcPort: e.srcPort, dstPort: e.dstPort, tcpFlags: e.tcpFlags,
    verdict: 'DROPPED', dropReason: reasonName(e.reason),
    direction: e.direction === 1 ? 'INGRESS' : 'EGRESS',
    observationPoint: e.direction === 1 ? 'FROM_NETWORK' : 'TO_NETWORK',
    bytes: e.len,
  });
}
