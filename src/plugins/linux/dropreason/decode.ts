/**
 * dropreason records, pure: the per-CPU map's key, the ring buffer's drop event, reason names from
 * the kernel's enum skb_drop_reason, and the flows built from events.
 */
import { newFlow, createAddressNames, type AddressNames, type Flow } from '../../../flow/index.js';
import type { KernelClock } from '../ebpf-shared/clock.js';
import { reportedReason, type DropReasonNaming } from './retina-names.js';

export const DIRECTIONS: Readonly<Record<number, 'ingress' | 'egress'>> = { 1: 'ingress', 2: 'egress' };

/** struct drop_key { u32 reason; u32 direction; } */
export const DROP_KEY_SIZE = 8;

export interface DropKey {
  readonly reason: number;
  readonly direction: number;
}

export function decodeDropKey(b: Uint8Array): DropKey {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { reason: v.getUint32(0, true), direction: v.getUint32(4, true) };
}

/**
 * Names by value, the kernel's prefix removed: 12 → NETFILTER_DROP (with `naming` retina:
 * IPTABLE_RULE_DROP, see retina-names.ts). Unknown values read REASON_<n>. Built once at start.
 */
export function reasonNames(kernelEnum: ReadonlyMap<number, string>, naming: DropReasonNaming = 'kernel'): (value: number) => string {
  const names = new Map<number, string>();
  for (const [v, n] of kernelEnum) names.set(v, reportedReason(n.replace(/^SKB_DROP_REASON_/, '').replace(/^SKB_/, ''), naming));
  return (value) => names.get(value) ?? `REASON_${value}`;
}

/**
 * The no-reason variant's own values (dropreason.bpf.c RETINA_FALLBACK_*), named as the kernel's
 * enum would name them; used instead of the kernel's enum when that variant runs (5.15 has no enum).
 */
export const FALLBACK_REASONS: ReadonlyMap<number, string> = new Map([[2, 'SKB_DROP_REASON_NOT_SPECIFIED'], [3, 'SKB_DROP_REASON_NETFILTER_DROP']]);

/** struct drop_event (dropreason.bpf.c): 24 bytes, then struct retina_tuple (40 bytes). */
export const DROP_EVENT_SIZE = 64;

export interface DropDecoderOptions {
  /** The kernel's drop-reason name of a value (reasonNames). */
  readonly reasonName: (value: number) => string;
  /** Converts the records' bpf_ktime_get_ns stamps (the plugin resyncs it). */
  readonly clock: KernelClock;
  /** Interned address strings (default: the decoder's own). */
  readonly names?: AddressNames;
}

/**
 * struct drop_event straight into a DROPPED Flow (hot path: no intermediate object, interned
 * addresses): ts_ns u64 | reason u32 | direction u32 | len u32 | ifindex u32 | struct retina_tuple
 * (saddr[16], daddr[16], sport, dport, family, proto, tcp_flags, pad). A packet freed on its way in
 * (it came in through an interface) is INGRESS / FROM_NETWORK, anything else EGRESS / TO_NETWORK.
 */
export function createDropDecoder(o: DropDecoderOptions): (v: DataView, off: number, size: number) => Flow {
  const names = o.names ?? createAddressNames();
  const { reasonName, clock } = o;
  return (v, off, size) => {
    if (size < DROP_EVENT_SIZE) throw new Error(`drop event of ${size} bytes, expected ${DROP_EVENT_SIZE}`);
    const t = off + 24;
    const family = v.getUint8(t + 36);
    const ingress = v.getUint32(off + 12, true) === 1;
    const f = newFlow('DROPPED');
    f.timeMs = clock.toMs(v.getUint32(off, true) + v.getUint32(off + 4, true) * 4294967296);
    if (family === 4 || family === 6) {
      f.srcIp = names.at(v, t, family);
      f.dstIp = names.at(v, t + 16, family);
      f.ipVersion = family;
    }
    f.proto = v.getUint8(t + 37);
    f.srcPort = v.getUint16(t + 32, true);
    f.dstPort = v.getUint16(t + 34, true);
    f.tcpFlags = v.getUint8(t + 38);
    f.dropReason = reasonName(v.getUint32(off + 8, true));
    f.direction = ingress ? 'INGRESS' : 'EGRESS';
    f.observationPoint = ingress ? 'FROM_NETWORK' : 'TO_NETWORK';
    f.bytes = v.getUint32(off + 16, true);
    return f;
  };
}
