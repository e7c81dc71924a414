import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelClock } from '../ebpf-shared/clock.js';
import { PACKET_EVENT_SIZE, createPacketDecoder } from './decode.js';

/** A struct packet_event as the kernel writes it (packet_event.h). */
function record(o: { v6?: boolean; packets: number; counts?: number[] }): DataView {
  const b = Buffer.alloc(PACKET_EVENT_SIZE + 8);
  const off = 8; // records sit at any 8-byte offset in the ring
  b.writeBigUInt64LE(2_000_000_000n, off);
  if (o.v6) {
    Buffer.from('fd000000000000000000000000000001', 'hex').copy(b, off + 8);
    Buffer.from('fd000000000000000000000000000002', 'hex').copy(b, off + 24);
  } else {
    Buffer.from([10, 0, 0, 1]).copy(b, off + 8);
    Buffer.from([10, 0, 0, 2]).copy(b, off + 24);
  }
  b.writeUInt16LE(40000, off + 40);
  b.writeUInt16LE(80, off + 42);
  b.writeUInt8(o.v6 ? 6 : 4, off + 44);
  b.writeUInt8(6, off + 45);
  b.writeUInt8(0, off + 46); // FROM_ENDPOINT
  b.writeUInt8(2, off + 47); // EGRESS
  b.writeUInt8(1, off + 48); // reply
  b.writeUInt8(3, off + 49); // interval
  b.writeUInt16LE(0x18, off + 50);
  b.writeUInt32LE(o.packets, off + 52);
  b.writeBigUInt64LE(123456789n, off + 56);
  b.writeUInt32LE(7, off + 64);
  b.writeUInt32LE(9, off + 68);
  (o.counts ?? []).forEach((c, i) => b.writeUInt32LE(c, off + 76 + i * 4));
  return new DataView(b.buffer, b.byteOffset, b.length);
}

test('a record decodes into one Flow: addresses, ports, points, flags, counts', () => {
  const decode = createPacketDecoder({ clock: kernelClock(1000) });
  const f = decode(record({ packets: 5, counts: [0, 0, 0, 0, 2, 5] }), 8, PACKET_EVENT_SIZE);
  assert.equal(f.timeMs, 3000);
  assert.deepEqual([f.srcIp, f.dstIp, f.srcPort, f.dstPort, f.proto, f.ipVersion], ['10.0.0.1', '10.0.0.2', 40000, 80, 6, 4]);
  assert.deepEqual([f.observationPoint, f.direction, f.isReply], ['FROM_ENDPOINT', 'EGRESS', true]);
  assert.deepEqual([f.tcpFlags, f.tcpTsval, f.tcpTsecr, f.packets, f.bytes], [0x18, 7, 9, 5, 123456789]);
  assert.deepEqual([...(f.tcpFlagCounts ?? [])], [0, 0, 0, 0, 2, 5, 0, 0, 0, 0]);
  const one = decode(record({ v6: true, packets: 1 }), 8, PACKET_EVENT_SIZE);
  assert.deepEqual([one.srcIp, one.ipVersion, one.tcpFlagCounts], ['fd00::1', 6, undefined]);
  const again = decode(record({ v6: true, packets: 1 }), 8, PACKET_EVENT_SIZE);
  assert.equal(again.dstIp, 'fd00::2');
  assert.deepEqual(Object.keys(f), Object.keys(again), 'one shape');
});

test('a short record or an unknown family throws (counted by the ring reader)', () => {
  const decode = createPacketDecoder({ clock: kernelClock(0) });
  assert.throws(() => decode(record({ packets: 1 }), 8, 100), /100 bytes/);
  const bad = record({ packets: 1 });
  bad.setUint8(8 + 44, 5);
  assert.throws(() => decode(bad, 8, PACKET_EVENT_SIZE), /family 5/);
});
