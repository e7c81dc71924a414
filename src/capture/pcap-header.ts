/**
 * The addresses, protocol and ports of one captured packet, read from its link-layer header (the
 * link types tcpdump writes on Linux: Ethernet, Linux cooked v1 and v2 (`-i any`), raw IP), compared
 * with a flow's 5-tuple without building strings: how a triggered capture finds the trigger's packet
 * among those it kept (ring.ts).
 */
import { isIP } from 'node:net';

export const LINKTYPE = Object.freeze({ ETHERNET: 1, RAW: 101, LINUX_SLL: 113, LINUX_SLL2: 276, IPV4: 228, IPV6: 229 } as const);

/** A flow's 5-tuple with its addresses as bytes (16 for IPv6, 4 for IPv4). */
export interface PacketTuple {
  readonly src: Uint8Array;
  readonly dst: Uint8Array;
  readonly proto: number;
  readonly srcPort: number;
  readonly dstPort: number;
}

/** An IPv4 or IPv6 address as bytes; undefined for anything else. */
export function addressBytes(ip: string): Uint8Array | undefined {
  const v = isIP(ip);
  if (v === 4) return Uint8Array.from(ip.split('.').map(Number));
  if (v !== 6) return undefined;
  let text = ip;
  const tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = v4[1]!.split('.').map(Number);
    tail.push((b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!);
    text = text.slice(0, -v4[1]!.length) + '0:0';
  }
  const [l = '', r] = text.split('::');
  const left = l ? l.split(':') : [];
  const right = r !== undefined && r !== '' ? r.split(':') : [];
  const groups = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right].map((g) => parseInt(g, 16));
  if (v4) groups.splice(6, 2, ...tail);
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  return out;
}

/** Where the IP header starts in a packet of `linkType`, and its version; undefined when it is not IP. */
function ipStart(linkType: number, p: Uint8Array): number | undefined {
  const u16 = (o: number): number => (o + 1 < p.length ? (p[o]! << 8) | p[o + 1]! : -1);
  let off: number;
  let etherType: number;
  switch (linkType) {
    case LINKTYPE.ETHERNET:
      off = 14;
      etherType = u16(12);
      while (etherType === 0x8100 || etherType === 0x88a8) {
        etherType = u16(off + 2);
        off += 4;
      }
      break;
    case LINKTYPE.LINUX_SLL: off = 16; etherType = u16(14); break;
    case LINKTYPE.LINUX_SLL2: off = 20; etherType = u16(0); break;
    case LINKTYPE.RAW: case LINKTYPE.IPV4: case LINKTYPE.IPV6: case 12: case 14: return 0;
    default: return undefined;
  }
  return etherType === 0x0800 || etherType === 0x86dd ? off : undefined;
}

const same = (p: Uint8Array, at: number, a: Uint8Array): boolean => {
  if (at + a.length > p.length) return false;
  for (let i = 0; i < a.length; i++) if (p[at + i] !== a[i]) return false;
  return true;
};

/** Whether the packet (`data`, link type `linkType`) carries `t` (a drop's tuple is the dropped packet's own). */
export function packetMatches(linkType: number, data: Uint8Array, t: PacketTuple): boolean {
  const off = ipStart(linkType, data);
  if (off === undefined || off >= data.length) return false;
  const version = data[off]! >> 4;
  let proto: number, l4: number, src: number, dst: number, alen: number;
  if (version === 4) {
    proto = data[off + 9] ?? -1;
    l4 = off + (data[off]! & 0x0f) * 4;
    src = off + 12; dst = off + 16; alen = 4;
  } else if (version === 6) {
    proto = data[off + 6] ?? -1;
    l4 = off + 40;
    src = off + 8; dst = off + 24; alen = 16;
  } else return false;
  if (proto !== t.proto || t.src.length !== alen) return false;
  const ports = proto === 6 || proto === 17 || proto === 132;
  const sp = ports && l4 + 3 < data.length ? (data[l4]! << 8) | data[l4 + 1]! : 0;
  const dp = ports && l4 + 3 < data.length ? (data[l4 + 2]! << 8) | data[l4 + 3]! : 0;
  const portsOk = !ports || ((t.srcPort === 0 || t.srcPort === sp) && (t.dstPort === 0 || t.dstPort === dp));
  return portsOk && same(data, src, t.src) && same(data, dst, t.dst);
}
