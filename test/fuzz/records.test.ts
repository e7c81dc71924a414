/**
 * Fuzzing the ring-buffer records of the Linux eBPF plugins (packetparser, dropreason, tcpretrans):
 * records are written here from their C struct layouts (native-linux/include, the plugins' .bpf.c)
 * with arbitrary field values and decoded back (round trip); random and cut records only give the
 * decoder's own Error, and a record decodes the same whatever bytes follow it in the ring. The
 * address formatters (src/flow/addr.ts) are checked against the WHATWG URL parser's IPv6 text.
 */
import assert from 'node:assert/strict';
import { createAddressNames, ipv6At } from '../../src/flow/index.js';
import { kernelClock } from '../../src/plugins/linux/ebpf-shared/clock.js';
import { PACKET_EVENT_SIZE, createPacketDecoder } from '../../src/plugins/linux/packetparser/decode.js';
import { DROP_EVENT_SIZE, createDropDecoder, decodeDropKey } from '../../src/plugins/linux/dropreason/decode.js';
import { RETRANS_EVENT_SIZE, createRetransDecoder, decodeRetrans } from '../../src/plugins/linux/tcpretrans/decode.js';
import { bytes, embedded, fc, fuzzer, onlyThrows, timed, view } from './harness.js';

const fuzz = fuzzer(import.meta.url);
const clock = kernelClock(0);

/** Writes little-endian fields into a zeroed record of `size` bytes. */
class Struct {
  readonly b: Uint8Array;
  readonly v: DataView;
  constructor(size: number) {
    this.b = new Uint8Array(size);
    this.v = new DataView(this.b.buffer);
  }
  u8(off: number, n: number): this {
    this.v.setUint8(off, n);
    return this;
  }
  u16(off: number, n: number): this {
    this.v.setUint16(off, n, true);
    return this;
  }
  u32(off: number, n: number): this {
    this.v.setUint32(off, n, true);
    return this;
  }
  u64(off: number, n: bigint): this {
    this.v.setBigUint64(off, n, true);
    return this;
  }
  raw(off: number, b: Uint8Array): this {
    this.b.set(b, off);
    return this;
  }
}

/** The RFC 5952 text of 16 address bytes by the WHATWG URL parser (IPv4-mapped kept dotted, as the decoders write it). */
function v6Text(b: Uint8Array): string {
  if (b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return `::ffff:${[...b.subarray(12)].join('.')}`;
  const words = [0, 2, 4, 6, 8, 10, 12, 14].map((i) => ((b[i] as number) * 256 + (b[i + 1] as number)).toString(16));
  return new URL(`http://[${words.join(':')}]/`).hostname.slice(1, -1);
}
const v4Text = (b: Uint8Array): string => [...b.subarray(0, 4)].join('.');

/** Addresses: random, and the shapes that exercise the zero-run rules (mapped, runs of zeros). */
const addr16 = fc.oneof(
  fc.uint8Array({ minLength: 16, maxLength: 16 }),
  fc.tuple(fc.array(fc.constantFrom(0, 0, 0, 1, 0xffff), { minLength: 8, maxLength: 8 })).map(([w]) => Uint8Array.from(w.flatMap((x) => [x >> 8, x & 255]))),
  fc.uint8Array({ minLength: 4, maxLength: 4 }).map((t) => Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...t])),
);
const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const u32 = fc.nat({ max: 0xffffffff });
const u16 = fc.nat({ max: 0xffff });
const u8 = fc.nat({ max: 0xff });

fuzz('addr-ipv6', fc.tuple(addr16, addr16), ([a, b]) => {
  assert.equal(ipv6At(view(a), 0), v6Text(a));
  // Interning with a tiny table (clears often) and colliding hashes still gives each its own text.
  const names = createAddressNames(2);
  for (const x of [a, b, a, b]) assert.equal(names.v6(view(x), 0), v6Text(x));
  assert.equal(names.v4(view(a).getUint32(0, false)), v4Text(a));
});

// ---- packetparser: struct packet_event (120 bytes) --------------------------------------------

const packetArb = fc.record({
  ts: u64, saddr: addr16, daddr: addr16, sport: u16, dport: u16, family: fc.constantFrom(4, 6), proto: u8, obs: u8, dir: u8, reply: u8,
  reason: u8, flags: u16, packets: u32, bytes: u64, tsval: u32, tsecr: u32, ifindex: u32, counts: fc.array(u32, { minLength: 10, maxLength: 10 }),
});
type Packet = typeof packetArb extends fc.Arbitrary<infer T> ? T : never;

function packetEvent(p: Packet): Uint8Array {
  const s = new Struct(PACKET_EVENT_SIZE).u64(0, p.ts).raw(8, p.saddr).raw(24, p.daddr).u16(40, p.sport).u16(42, p.dport).u8(44, p.family).u8(45, p.proto)
    .u8(46, p.obs).u8(47, p.dir).u8(48, p.reply).u8(49, p.reason).u16(50, p.flags).u32(52, p.packets).u64(56, p.bytes).u32(64, p.tsval).u32(68, p.tsecr).u32(72, p.ifindex);
  p.counts.forEach((c, i) => s.u32(76 + i * 4, c));
  return s.b;
}

fuzz('packetparser-roundtrip', packetArb, (p) => {
  const f = timed('packet decoder', () => createPacketDecoder({ clock, nodeName: 'n1' })(view(packetEvent(p)), 0, PACKET_EVENT_SIZE));
  const six = p.family === 6;
  assert.deepEqual(
    [f.verdict, f.srcIp, f.dstIp, f.ipVersion, f.proto, f.srcPort, f.dstPort, f.tcpFlags, f.tcpTsval, f.tcpTsecr, f.packets, f.bytes, f.timeMs, f.nodeName],
    ['FORWARDED', six ? v6Text(p.saddr) : v4Text(p.saddr), six ? v6Text(p.daddr) : v4Text(p.daddr), p.family, p.proto, p.sport, p.dport, p.flags, p.tsval, p.tsecr,
      p.packets, Number(p.bytes), Number(p.ts) / 1e6, 'n1'],
  );
  assert.equal(f.direction, ['UNKNOWN', 'INGRESS', 'EGRESS'][p.dir] ?? 'UNKNOWN');
  assert.equal(f.observationPoint, ['FROM_ENDPOINT', 'TO_ENDPOINT', 'FROM_NETWORK', 'TO_NETWORK'][p.obs] ?? 'UNKNOWN');
  assert.equal(f.isReply, p.reply === 0 ? false : p.reply === 1 ? true : undefined);
  assert.deepEqual(f.tcpFlagCounts, p.packets > 1 && p.proto === 6 ? p.counts : undefined);
});

/** Random records of any size at any offset: the decoder's own Error or a flow, and nothing read past the record. */
function windowed<T>(name: string, size: number, decode: () => (v: DataView, off: number, n: number) => T): void {
  fuzz(name, fc.tuple(fc.oneof(bytes(size + 8), fc.constant(size).chain((n) => bytes(n, n))), fc.nat(16)), ([b, lead]) => {
    const run = (fill: number): unknown => {
      const e = embedded(b, lead, 256, fill);
      const r = timed(name, () => onlyThrows([Error], () => decode()(e.v, e.off, b.length)));
      return r.ok ? r.value : r.error.message;
    };
    assert.deepEqual(run(0), run(0xff), 'the decoder read past its record');
  });
}
windowed('packetparser-random', PACKET_EVENT_SIZE, () => createPacketDecoder({ clock }));

// ---- dropreason: struct drop_event (64 bytes) and its map key ---------------------------------

const dropArb = fc.record({ ts: u64, reason: u32, dir: u32, len: u32, ifindex: u32, saddr: addr16, daddr: addr16, sport: u16, dport: u16, family: fc.constantFrom(0, 4, 6, 9), proto: u8, flags: u8 });
type Drop = typeof dropArb extends fc.Arbitrary<infer T> ? T : never;
const dropEvent = (d: Drop): Uint8Array =>
  new Struct(DROP_EVENT_SIZE).u64(0, d.ts).u32(8, d.reason).u32(12, d.dir).u32(16, d.len).u32(20, d.ifindex).raw(24, d.saddr).raw(40, d.daddr)
    .u16(56, d.sport).u16(58, d.dport).u8(60, d.family).u8(61, d.proto).u8(62, d.flags).b;

fuzz('dropreason-roundtrip', dropArb, (d) => {
  const f = timed('drop decoder', () => createDropDecoder({ clock, reasonName: (n) => `R${n}` })(view(dropEvent(d)), 0, DROP_EVENT_SIZE));
  const ip = (a: Uint8Array): string => (d.family === 6 ? v6Text(a) : d.family === 4 ? v4Text(a) : '');
  const ingress = d.dir === 1;
  assert.deepEqual(
    [f.verdict, f.srcIp, f.dstIp, f.proto, f.srcPort, f.dstPort, f.tcpFlags, f.dropReason, f.direction, f.observationPoint, f.bytes, f.timeMs],
    ['DROPPED', ip(d.saddr), ip(d.daddr), d.proto, d.sport, d.dport, d.flags, `R${d.reason}`, ingress ? 'INGRESS' : 'EGRESS', ingress ? 'FROM_NETWORK' : 'TO_NETWORK', d.len, Number(d.ts) / 1e6],
  );
  assert.deepEqual(decodeDropKey(new Struct(8).u32(0, d.reason).u32(4, d.dir).b), { reason: d.reason, direction: d.dir });
});
windowed('dropreason-random', DROP_EVENT_SIZE, () => createDropDecoder({ clock, reasonName: String }));

// ---- tcpretrans: struct retrans_event (56 bytes) ----------------------------------------------

const retransArb = fc.record({ ts: u64, saddr: addr16, daddr: addr16, sport: u16, dport: u16, family: fc.constantFrom(4, 6), state: u8, flags: u8, segs: u32, len: u32 });
type Retrans = typeof retransArb extends fc.Arbitrary<infer T> ? T : never;
const retransEvent = (r: Retrans): Uint8Array =>
  new Struct(RETRANS_EVENT_SIZE).u64(0, r.ts).raw(8, r.saddr).raw(24, r.daddr).u16(40, r.sport).u16(42, r.dport).u8(44, r.family).u8(45, r.state).u8(46, r.flags).u32(48, r.segs).u32(52, r.len).b;

fuzz('tcpretrans-roundtrip', retransArb, (r) => {
  const b = retransEvent(r);
  const f = timed('retrans decoder', () => createRetransDecoder({ clock })(view(b), 0, RETRANS_EVENT_SIZE));
  const six = r.family === 6;
  assert.deepEqual(
    [f.verdict, f.srcIp, f.dstIp, f.ipVersion, f.proto, f.srcPort, f.dstPort, f.tcpFlags, f.packets, f.bytes, f.timeMs],
    ['RETRANSMISSION', six ? v6Text(r.saddr) : v4Text(r.saddr), six ? v6Text(r.daddr) : v4Text(r.daddr), r.family, 6, r.sport, r.dport, r.flags, r.segs, r.len, Number(r.ts) / 1e6],
  );
  const rec = decodeRetrans(view(b), 0, RETRANS_EVENT_SIZE);
  assert.deepEqual([rec.family, rec.srcPort, rec.dstPort, rec.state, rec.tcpFlags, rec.segs, rec.len, rec.tsNs], [r.family, r.sport, r.dport, r.state, r.flags, r.segs, r.len, Number(r.ts)]);
  if (six) assert.deepEqual([rec.src6, rec.dst6], [r.saddr, r.daddr]);
  else assert.deepEqual([rec.srcV4, rec.dstV4], [view(r.saddr).getUint32(0), view(r.daddr).getUint32(0)]);
});
windowed('tcpretrans-random', RETRANS_EVENT_SIZE, () => createRetransDecoder({ clock }));
windowed('tcpretrans-record-random', RETRANS_EVENT_SIZE, () => decodeRetrans);
