/**
 * packetparser records, pure: struct packet_event (native-linux/include/packet_event.h), 120 bytes,
 * straight into Flows. Hot path: one Flow per record, IPv4 strings interned per decoder, no
 * intermediate objects; flag counts are copied only for aggregated reports (more than one packet).
 */
import { createFlow, type Flow, type ObservationPoint, type TrafficDirection } from '../../../flow/index.js';
import { ipv6At } from '../ebpf-shared/addr.js';

export const PACKET_EVENT_SIZE = 120;
const FLAG_SLOTS = 10;

const OBS: readonly ObservationPoint[] = ['FROM_ENDPOINT', 'TO_ENDPOINT', 'FROM_NETWORK', 'TO_NETWORK'];
const DIRS: readonly TrafficDirection[] = ['UNKNOWN', 'INGRESS', 'EGRESS'];

export interface PacketDecoderOptions {
  /** Wall-clock ms at CLOCK_MONOTONIC 0 (the kernel stamps records with bpf_ktime_get_ns). */
  readonly monotonicOffsetMs: () => number;
  readonly nodeName?: string;
  /** Most IPv4 strings kept interned (default 65 536). */
  readonly internLimit?: number;
}

export type PacketDecoder = (v: DataView, off: number, size: number) => Flow;

export function createPacketDecoder(o: PacketDecoderOptions): PacketDecoder {
  const limit = o.internLimit ?? 65_536;
  const v4Names = new Map<number, string>();
  const nodeName = o.nodeName ?? '';
  const v4 = (n: number): string => {
    let s = v4Names.get(n);
    if (s === undefined) {
      s = `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
      if (v4Names.size >= limit) v4Names.clear();
      v4Names.set(n, s);
    }
    return s;
  };
  return (v, off, size) => {
    if (size < PACKET_EVENT_SIZE) throw new Error(`packet record of ${size} bytes, expected ${PACKET_EVENT_SIZE}`);
    const family = v.getUint8(off + 44);
    if (family !== 4 && family !== 6) throw new Error(`packet record: family ${family}, expected 4 or 6`);
    const six = family === 6;
    const tsNs = v.getUint32(off, true) + v.getUint32(off + 4, true) * 4294967296;
    const packets = v.getUint32(off + 52, true);
    const obs = v.getUint8(off + 46);
    const dir = v.getUint8(off + 47);
    const reply = v.getUint8(off + 48);
    let counts: Uint32Array | undefined;
    if (packets > 1 && v.getUint8(off + 45) === 6) {
      counts = new Uint32Array(FLAG_SLOTS);
      for (let i = 0; i < FLAG_SLOTS; i++) counts[i] = v.getUint32(off + 76 + i * 4, true);
    }
    return createFlow({
      timeMs: o.monotonicOffsetMs() + tsNs / 1e6,
      srcIp: six ? ipv6At(v, off + 8) : v4(v.getUint32(off + 8, false)),
      dstIp: six ? ipv6At(v, off + 24) : v4(v.getUint32(off + 24, false)),
      ipVersion: six ? 6 : 4,
      proto: v.getUint8(off + 45),
      srcPort: v.getUint16(off + 40, true),
      dstPort: v.getUint16(off + 42, true),
      tcpFlags: v.getUint16(off + 50, true),
      tcpTsval: v.getUint32(off + 64, true),
      tcpTsecr: v.getUint32(off + 68, true),
      verdict: 'FORWARDED',
      direction: DIRS[dir] ?? 'UNKNOWN',
      observationPoint: OBS[obs] ?? 'UNKNOWN',
      isReply: reply === 0 ? false : reply === 1 ? true : undefined,
      packets,
      bytes: v.getUint32(off + 56, true) + v.getUint32(off + 60, true) * 4294967296,
      tcpFlagCounts: counts,
      nodeName,
    });
  };
}

/** Wall-clock ms at CLOCK_MONOTONIC 0, as this process sees it now (Node's hrtime is CLOCK_MONOTONIC). */
export function monotonicOffsetMs(): number {
  return Date.now() - Number(process.hrtime.bigint()) / 1e6;
}
