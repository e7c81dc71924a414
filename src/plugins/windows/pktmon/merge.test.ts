/**
 * The merger's edges on our own synthetic appearances (no real sample: capacity, late appearances,
 * a drop after forwarding appearances, directions). The real captures are in
 * test/windows/etl/pktmon-real.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Flow } from '../../../flow/index.js';
import { PacketMerger, type PktmonRecord } from './merge.js';

/** One appearance: an Ethernet IPv4 UDP frame 10.0.0.1:1000 -> 10.0.0.2:53 of packet `group`. */
function appearance(group: number, n: number, opts: { dir?: number; drop?: number; ts?: bigint; size?: number; id?: number } = {}): PktmonRecord {
  const b = Buffer.alloc(34 + 14 + 28);
  b.writeBigUInt64LE(BigInt(group), 0);
  b.writeUInt16LE(1, 8);
  b.writeUInt16LE(n, 10);
  b.writeUInt16LE(opts.dir ?? 4, 12);
  b.writeUInt16LE(1, 14);
  b.writeUInt16LE(n, 16);
  b.writeUInt32LE(opts.drop ?? 0, 22);
  b.writeUInt16LE(opts.size ?? 70, 30);
  b.writeUInt16LE(42, 32);
  b.writeUInt16BE(0x0800, 34 + 12);
  Buffer.from('4500001c00010000401100000a0000010a000002', 'hex').copy(b, 48);
  b.writeUInt16BE(1000, 48 + 20);
  b.writeUInt16BE(53, 48 + 22);
  return { id: opts.id ?? (opts.drop ? 170 : 160), timestamp: opts.ts ?? 133_000_000_000_000_000n + BigInt(group) * 1000n + BigInt(n), data: b };
}

describe('pktmon merger (synthetic appearances: no real sample of these cases)', () => {
  it('a packet forwarded at two components then dropped at a third is one DROPPED flow, never FORWARDED', () => {
    const m = new PacketMerger();
    const out: Flow[] = [];
    m.push([appearance(1, 1), appearance(1, 2)], out);
    assert.equal(out.length, 0, 'held while its appearances may still come');
    m.push([appearance(1, 3, { drop: 912 })], out);
    assert.deepEqual(out.map((f) => [f.verdict, f.dropReason, f.direction, f.bytes]), [['DROPPED', 'Drop_NL_BadChecksum', 'EGRESS', 70]]);
    m.push([appearance(1, 4)], out);
    m.tick(out); m.tick(out); m.flush(out);
    assert.equal(out.length, 1, 'an appearance after the drop is late, not a second flow');
    assert.deepEqual([m.stats.dropped, m.stats.late], [1, 1]);
    m.push([appearance(1, 1, { ts: 133_000_000_000_000_000n + 100_002_000n })], out);
    m.flush(out);
    assert.equal(out.length, 2, 'the same PktGroupId 10 s later is a new packet (PktMon restarted)');
  });

  it('sent packets (first seen Tx/Out/vSwitch Ingress) read at their first appearance as EGRESS, received ones at their last as INGRESS', () => {
    const m = new PacketMerger();
    const out: Flow[] = [];
    m.push([appearance(1, 1, { dir: 5, size: 100 }), appearance(1, 2, { dir: 6, size: 150 }), appearance(2, 1, { dir: 3, size: 200 }), appearance(2, 2, { dir: 3, size: 180 })], out);
    m.flush(out);
    assert.deepEqual(out.map((f) => [f.direction, f.observationPoint, f.bytes]), [['EGRESS', 'FROM_ENDPOINT', 100], ['INGRESS', 'TO_ENDPOINT', 180]]);
  });

  it('numbered appearances: appearance 1 decides, in whatever order they arrive (synthetic: no real capture delivers them out of order)', () => {
    const m = new PacketMerger();
    const out: Flow[] = [];
    // Packet 1 sent by a pod (1: its port's Ingress into the vSwitch, 2: the vSwitch's Egress towards the NIC), appearance 2 delivered first.
    // Packet 2 received (1 and 2 Rx), its appearance 2 delivered first: read at its last appearance, 2.
    m.push([appearance(1, 2, { dir: 6, size: 150 }), appearance(2, 2, { dir: 3, size: 180 }), appearance(1, 1, { dir: 5, size: 100 }), appearance(2, 1, { dir: 3, size: 200 })], out);
    m.flush(out);
    assert.deepEqual(out.map((f) => [f.direction, f.observationPoint, f.bytes]), [['EGRESS', 'FROM_ENDPOINT', 100], ['INGRESS', 'TO_ENDPOINT', 180]]);
  });

  it('held packets are bounded: past the capacity the oldest closes early and is counted', () => {
    const m = new PacketMerger({ capacity: 2 });
    const out: Flow[] = [];
    m.push([appearance(1, 1), appearance(2, 1), appearance(3, 1)], out);
    assert.equal(out.length, 1);
    assert.deepEqual([m.stats.evicted, m.held], [1, 2]);
  });

  it('a packet no newer event settles is closed after two drains (aged), one that others outlive by 10 ms settles', () => {
    const m = new PacketMerger();
    const out: Flow[] = [];
    m.push([appearance(1, 1)], out);
    m.tick(out);
    assert.equal(out.length, 0);
    m.tick(out);
    assert.deepEqual([out.length, m.stats.aged], [1, 1]);
    m.push([appearance(2, 1, { ts: 134_000_000_000_000_000n }), appearance(3, 1, { ts: 134_000_000_000_200_000n })], out);
    assert.deepEqual([out.length, m.stats.settled, m.held], [2, 1, 1]);
  });
});
