/**
 * tcpretrans records, pure. struct retrans_event (tcpretrans.bpf.c), 56 bytes:
 * u64 ts_ns | u8 saddr[16] | u8 daddr[16] | u16 sport | u16 dport | u8 family | u8 state |
 * u8 tcp_flags | u8 pad | u32 segs | u32 len. IPv4 addresses sit in the first 4 address bytes.
 */
import { newFlow, createAddressNames, type AddressNames, type Flow } from '../../../flow/index.js';
import type { KernelClock } from '../ebpf-shared/clock.js';

export const RETRANS_EVENT_SIZE = 56;

/** One retransmission, as the kernel saw it; addresses stay raw until a flow is built. */
export interface RetransRecord {
  readonly tsNs: number;
  readonly family: 4 | 6;
  /** IPv4 addresses as big-endian u32 (0 for IPv6). */
  readonly srcV4: number;
  readonly dstV4: number;
  /** IPv6 addresses (copied; undefined for IPv4). */
  readonly src6: Uint8Array | undefined;
  readonly dst6: Uint8Array | undefined;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly state: number;
  readonly tcpFlags: number;
  readonly segs: number;
  readonly len: number;
}

export function decodeRetrans(v: DataView, off: number, size: number): RetransRecord {
  if (size < RETRANS_EVENT_SIZE) throw new Error(`retransmission record of ${size} bytes, expected ${RETRANS_EVENT_SIZE}`);
  const six = v.getUint8(off + 44) === 6;
  const at = v.byteOffset + off;
  return {
    tsNs: v.getUint32(off, true) + v.getUint32(off + 4, true) * 4294967296,
    family: six ? 6 : 4,
    srcV4: six ? 0 : v.getUint32(off + 8, false),
    dstV4: six ? 0 : v.getUint32(off + 24, false),
    src6: six ? new Uint8Array(v.buffer.slice(at + 8, at + 24)) : undefined,
    dst6: six ? new Uint8Array(v.buffer.slice(at + 24, at + 40)) : undefined,
    srcPort: v.getUint16(off + 40, true),
    dstPort: v.getUint16(off + 42, true),
    state: v.getUint8(off + 45),
    tcpFlags: v.getUint8(off + 46),
    segs: v.getUint32(off + 48, true),
    len: v.getUint32(off + 52, true),
  };
}

export interface RetransDecoderOptions {
  /** Converts the records' bpf_ktime_get_ns stamps (the plugin resyncs it). */
  readonly clock: KernelClock;
  /** Interned address strings (default: the decoder's own). */
  readonly names?: AddressNames;
}

/**
 * struct retrans_event straight into a RETRANSMISSION Flow (hot path: no intermediate object,
 * interned addresses): the sender's side, EGRESS, TO_STACK; packets = segments, bytes = their length.
 */
export function createRetransDecoder(o: RetransDecoderOptions): (v: DataView, off: number, size: number) => Flow {
  const names = o.names ?? createAddressNames();
  const clock = o.clock;
  return (v, off, size) => {
    if (size < RETRANS_EVENT_SIZE) throw new Error(`retransmission record of ${size} bytes, expected ${RETRANS_EVENT_SIZE}`);
    const six = v.getUint8(off + 44) === 6;
    const f = newFlow('RETRANSMISSION');
    f.timeMs = clock.toMs(v.getUint32(off, true) + v.getUint32(off + 4, true) * 4294967296);
    f.srcIp = six ? names.v6(v, off + 8) : names.v4(v.getUint32(off + 8, false));
    f.dstIp = six ? names.v6(v, off + 24) : names.v4(v.getUint32(off + 24, false));
    f.ipVersion = six ? 6 : 4;
    f.proto = 6;
    f.srcPort = v.getUint16(off + 40, true);
    f.dstPort = v.getUint16(off + 42, true);
    f.tcpFlags = v.getUint8(off + 46);
    f.direction = 'EGRESS';
    f.observationPoint = 'TO_STACK';
    f.packets = v.getUint32(off + 48, true);
    f.bytes = v.getUint32(off + 52, true);
    return f;
  };
}
