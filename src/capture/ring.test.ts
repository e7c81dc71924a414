import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addressBytes, LINKTYPE, packetMatches } from './pcap-header.js';
import { MATCH_WINDOW_MS, PcapStreamError, TriggeredPcap, type RingOptions, type TriggerCut, type TriggerPoint } from './ring.js';

/** A classic pcap (µs, little-endian) of UDP/IPv4 packets in Linux cooked v2 framing, as `tcpdump -i any -w -` writes. */
function header(linkType: number = LINKTYPE.LINUX_SLL2): Buffer {
  const h = Buffer.alloc(24);
  h.writeUInt32LE(0xa1b2c3d4, 0);
  h.writeUInt16LE(2, 4);
  h.writeUInt16LE(4, 6);
  h.writeUInt32LE(262144, 16);
  h.writeUInt32LE(linkType, 20);
  return h;
}

function udp(tsMs: number, src: string, dst: string, sport: number, dport: number, payload = 8): Buffer {
  const ip = Buffer.alloc(20 + 8 + payload);
  ip[0] = 0x45;
  ip[9] = 17;
  Buffer.from(addressBytes(src)!).copy(ip, 12);
  Buffer.from(addressBytes(dst)!).copy(ip, 16);
  ip.writeUInt16BE(sport, 20);
  ip.writeUInt16BE(dport, 22);
  const sll2 = Buffer.alloc(20);
  sll2.writeUInt16BE(0x0800, 0);
  const data = Buffer.concat([sll2, ip]);
  const rec = Buffer.alloc(16);
  rec.writeUInt32LE(Math.floor(tsMs / 1000), 0);
  rec.writeUInt32LE(Math.round((tsMs % 1000) * 1000), 4);
  rec.writeUInt32LE(data.length, 8);
  rec.writeUInt32LE(data.length, 12);
  return Buffer.concat([rec, data]);
}

/** The destination ports of a written pcap, in order. */
function ports(file: Buffer): number[] {
  const out: number[] = [];
  for (let pos = 24; pos + 16 <= file.length;) {
    const incl = file.readUInt32LE(pos + 8);
    out.push(file.readUInt16BE(pos + 16 + 20 + 22));
    pos += 16 + incl;
  }
  return out;
}

const T0 = 1_700_000_000_000;
const tuple = (dport: number): TriggerPoint['tuple'] => ({ src: addressBytes('10.0.0.1')!, dst: addressBytes('10.0.0.2')!, proto: 17, srcPort: 40000, dstPort: dport });

function ring(o: Partial<RingOptions> = {}): { r: TriggeredPcap; out: () => Buffer } {
  const parts: Buffer[] = [];
  const r = new TriggeredPcap({ packets: 3, durationMs: undefined, maxBytes: 1 << 20, slackMs: 2000, ...o }, (b) => parts.push(Buffer.from(b)));
  return { r, out: () => Buffer.concat(parts) };
}

test('the packets before the trigger\'s packet, the packet itself and everything after, in chunks of any size', () => {
  const { r, out } = ring();
  const stream = Buffer.concat([header(), ...Array.from({ length: 20 }, (_, i) => udp(T0 + i * 10, '10.0.0.1', '10.0.0.2', 40000, i === 12 ? 9999 : 1000 + i))]);
  // odd chunk sizes: a record split across chunks, the header too
  for (let i = 0; i < stream.length; i += 7) r.feed(stream.subarray(i, i + 7));
  assert.equal(r.counts.written, 0, 'nothing is written before the trigger');
  r.trigger({ timeMs: T0 + 12 * 10 + 0.2, tuple: tuple(9999) });
  r.feed(udp(T0 + 2000, '10.0.0.1', '10.0.0.2', 40000, 2000));
  const file = out();
  assert.deepEqual(file.subarray(0, 24), header());
  assert.deepEqual(ports(file), [1009, 1010, 1011, 9999, 1013, 1014, 1015, 1016, 1017, 1018, 1019, 2000]);
  assert.deepEqual(r.cut, { preTriggerPackets: 3, triggerPacketIndex: 3, triggerPacketTimeMs: T0 + 120, matchedBy: 'tuple' });
  r.feed(udp(T0 + 2010, '10.0.0.1', '10.0.0.2', 40000, 2001));
  assert.deepEqual(ports(out()).slice(-2), [2000, 2001], 'after the cut, packets are written as they come');
});

test('the trigger may come before its packet: the cut waits for packets past the match window', () => {
  const { r, out } = ring({ packets: 2 });
  r.feed(Buffer.concat([header(), udp(T0, '10.0.0.1', '10.0.0.2', 40000, 1), udp(T0 + 1, '10.0.0.1', '10.0.0.2', 40000, 2), udp(T0 + 2, '10.0.0.1', '10.0.0.2', 40000, 3)]));
  r.trigger({ timeMs: T0 + 50, tuple: tuple(9999) });
  assert.equal(r.cut, undefined);
  r.feed(Buffer.concat([udp(T0 + 50.5, '10.0.0.1', '10.0.0.2', 40000, 9999), udp(T0 + 60, '10.0.0.1', '10.0.0.2', 40000, 4)]));
  assert.equal(r.cut, undefined, 'still within the window');
  r.feed(udp(T0 + 50 + MATCH_WINDOW_MS + 1, '10.0.0.1', '10.0.0.2', 40000, 5));
  assert.deepEqual(ports(out()), [2, 3, 9999, 4, 5]);
  assert.equal((r as { readonly cut: TriggerCut | undefined }).cut?.matchedBy, 'tuple');
});

test('the nearest packet of the tuple is the trigger\'s (its retransmission a second later is not); without one, the first packet at its time', () => {
  const a = ring({ packets: 1 });
  a.r.feed(Buffer.concat([header(), udp(T0, '10.0.0.1', '10.0.0.2', 40000, 9999), udp(T0 + 5, '10.0.0.1', '10.0.0.2', 40000, 7), udp(T0 + 900, '10.0.0.1', '10.0.0.2', 40000, 9999)]));
  a.r.trigger({ timeMs: T0 + 0.3, tuple: tuple(9999) });
  a.r.finish();
  assert.deepEqual(ports(a.out()), [9999, 7, 9999]);
  assert.equal(a.r.cut?.triggerPacketIndex, 0);
  const b = ring({ packets: 1 });
  b.r.feed(Buffer.concat([header(), udp(T0, '10.0.0.1', '10.0.0.2', 40000, 1), udp(T0 + 10, '10.0.0.1', '10.0.0.2', 40000, 2), udp(T0 + 20, '10.0.0.1', '10.0.0.2', 40000, 3)]));
  b.r.trigger({ timeMs: T0 + 9, tuple: tuple(9999) });
  b.r.finish();
  assert.deepEqual(b.r.cut, { preTriggerPackets: 1, triggerPacketIndex: 1, triggerPacketTimeMs: T0 + 10, matchedBy: 'time' });
  assert.deepEqual(ports(b.out()), [1, 2, 3]);
});

test('a pre-trigger duration keeps the packets of that long before the trigger\'s packet', () => {
  const { r, out } = ring({ packets: undefined, durationMs: 100, slackMs: 300 });
  const recs = Array.from({ length: 100 }, (_, i) => udp(T0 + i * 10, '10.0.0.1', '10.0.0.2', 40000, i === 80 ? 9999 : i));
  r.feed(Buffer.concat([header(), ...recs]));
  r.trigger({ timeMs: T0 + 800, tuple: tuple(9999) });
  r.finish();
  // 100 ms before the packet at T0+800: T0+700 .. T0+790 (11 packets with the one at exactly T0+700)
  assert.deepEqual(ports(out()).slice(0, 12), [70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 9999, 81]);
  assert.equal(r.cut?.preTriggerPackets, 10);
});

test('the ring is bounded by its bytes and by what no late trigger could want; the oldest go first', () => {
  const size = udp(T0, '10.0.0.1', '10.0.0.2', 40000, 1).length;
  const maxBytes = 300_000;
  const { r } = ring({ packets: 5, maxBytes, slackMs: 1e9 });
  r.feed(header());
  for (let i = 0; i < 10_000; i++) r.feed(udp(T0 + i, '10.0.0.1', '10.0.0.2', 40000, i % 60000));
  const fit = Math.floor(maxBytes / size);
  assert.ok(r.counts.inRing <= fit && r.counts.inRing >= fit - 1, `${fit} records of ${size} bytes fit in ${maxBytes}: ${r.counts.inRing}`);
  assert.equal(r.counts.inRing + r.counts.evicted, 10_000);
  const slack = ring({ packets: 5, slackMs: 100 });
  slack.r.feed(header());
  for (let i = 0; i < 1000; i++) slack.r.feed(udp(T0 + i, '10.0.0.1', '10.0.0.2', 40000, i));
  // 1 packet per ms: the last 100 ms, and 5 more before them
  assert.equal(slack.r.counts.inRing, 106);
  slack.r.trigger({ timeMs: T0 + 900, tuple: tuple(900) });
  slack.r.finish();
  assert.deepEqual(ports(slack.out()).slice(0, 6), [895, 896, 897, 898, 899, 900]);
});

test('not a pcap stream: a clear error', () => {
  const { r } = ring();
  assert.throws(() => r.feed(Buffer.alloc(24, 1)), PcapStreamError);
  const e = ring();
  const bad = header();
  const rec = Buffer.alloc(16);
  rec.writeUInt32LE(10_000_000, 8);
  assert.throws(() => e.r.feed(Buffer.concat([bad, rec])), /a pcap record of 10000000 bytes/);
});

test('packet headers: Ethernet with a VLAN tag, cooked v1 and v2, raw; IPv6 addresses as bytes', () => {
  const ip = udp(T0, '10.0.0.1', '10.0.0.2', 40000, 9999).subarray(16 + 20);
  const eth = Buffer.concat([Buffer.alloc(12), Buffer.from([0x81, 0, 0, 5, 0x08, 0]), ip]);
  const sll = Buffer.concat([Buffer.alloc(14), Buffer.from([0x08, 0]), ip]);
  const t = tuple(9999)!;
  assert.ok(packetMatches(LINKTYPE.ETHERNET, eth, t));
  assert.ok(packetMatches(LINKTYPE.LINUX_SLL, sll, t));
  assert.ok(packetMatches(LINKTYPE.RAW, ip, t));
  assert.ok(!packetMatches(LINKTYPE.RAW, ip, { ...t, dstPort: 9998 }));
  assert.ok(!packetMatches(LINKTYPE.RAW, ip, { ...t, src: t.dst, dst: t.src }), 'the dropped packet\'s own direction only');
  assert.deepEqual([...addressBytes('fd00::1:2')!], [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2]);
  assert.deepEqual([...addressBytes('::ffff:10.0.0.1')!], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1]);
  assert.equal(addressBytes('nope'), undefined);
});
