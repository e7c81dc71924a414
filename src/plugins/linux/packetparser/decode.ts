/**
 * packetparser records, pure: struct packet_event (native-linux/include/packet_event.h), 120 bytes,
 * straight into Flows. Hot path: one Flow per record filled field by field (newFlow), interned
 * address strings, no intermediate objects; flag counts are copied only for aggregated reports
 * (more than one packet).
 */
import { newFlow, createAddressNames, type AddressNames, type Flow, type ObservationPoint, type TrafficDirection } from '../../../flow/index.js';
import type { KernelClock } from '../ebpf-shared/clock.js';

export const PACKET_EVENT_SIZE = 120;
const FLAG_SLOTS = 10;

const OBS: readonly ObservationPoint[] = ['FROM_ENDPOINT', 'TO_ENDPOINT', 'FROM_NETWORK', 'TO_NETWORK'];
const DIRS: readonly TrafficDirection[] = ['UNKNOWN', 'INGRESS', 'EGRESS'];

export interface PacketDecoderOptions {
  /** Converts the records' bpf_ktime_get_ns stamps (the plugin resyncs it). */
  readonly clock: KernelClock;
  readonly nodeName?: string;
  /** Interned address strings (default: the decoder's own). */
  readonly names?: AddressNames;
}

export type PacketDecoder = (v: DataView, off: number, size: number) => Flow;

export function createPacketDecoder(o: PacketDecoderOptions): PacketDecoder {
  const names = o.names ?? createAddressNames();
  const nodeName = o.nodeName ?? '';
  const clock = o.clock;
  return (v, off, size) => {
    if (size < PACKET_EVENT_SIZE) throw new Error(`packet record of ${size} bytes, expected ${PACKET_EVENT_SIZE}`);
    const family = v.getUint8(off + 44);
    if (family !== 4 && family !== 6) throw new Error(`packet record: family ${family}, expected 4 or 6`);
    const six = family === 6;
    const proto = v.getUint8(off + 45);
    const packets = v.getUint32(off + 52, true);
    const reply = v.getUint8(off + 48);
    const f = newFlow('FORWARDED');
    f.timeMs = clock.toMs(v.getUint32(off, true) + v.getUint32(off + 4, true) * 4294967296);
    f.srcIp = six ? names.v6(v, off + 8) : names.v4(v.getUint32(off + 8, false));
    f.dstIp = six ? names.v6(v, off + 24) : names.v4(v.getUint32(off + 24, false));
    f.ipVersion = six ? 6 : 4;
    f.proto = proto;
    f.srcPort = v.getUint16(off + 40, true);
    f.dstPort = v.getUint16(off + 42, true);
    f.tcpFlags = v.getUint16(off + 50, true);
    f.tcpTsval = v.getUint32(off + 64, true);
    f.tcpTsecr = v.getUint32(off + 68, true);
    f.direction = DIRS[v.getUint8(off + 47)] ?? 'UNKNOWN';
    f.observationPoint = OBS[v.getUint8(off + 46)] ?? 'UNKNOWN';
    f.isReply = reply === 0 ? false : reply === 1 ? true : undefined;
    f.packets = packets;
    f.bytes = v.getUint32(off + 56, true) + v.getUint32(off + 60, true) * 4294967296;
    if (packets > 1 && proto === 6) {
      const counts = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
      for (let i = 0; i < FLAG_SLOTS; i++) counts[i] = v.getUint32(off + 76 + i * 4, true);
      f.tcpFlagCounts = counts;
    }
    f.nodeName = nodeName;
    return f;
  };
}
