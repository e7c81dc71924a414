import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelClock } from '../ebpf-shared/clock.js';
import { RETRANS_EVENT_SIZE, createRetransDecoder, decodeRetrans } from './decode.js';
import { deltaTracker } from './maps.js';

function record(family: 4 | 6): Buffer {
  const e = Buffer.alloc(RETRANS_EVENT_SIZE);
  e.writeUInt32LE(0x89abcdef, 0);
  e.writeUInt32LE(2, 4);
  if (family === 4) {
    Buffer.from([192, 0, 2, 1]).copy(e, 8);
    Buffer.from([198, 51, 100, 7]).copy(e, 24);
  } else {
    Buffer.from('20010db8000000000000000000000001', 'hex').copy(e, 8);
    Buffer.from('20010db8000000000000000000000002', 'hex').copy(e, 24);
  }
  e.writeUInt16LE(43210, 40);
  e.writeUInt16LE(443, 42);
  e[44] = family;
  e[45] = 1;
  e[46] = 0x18;
  e.writeUInt32LE(3, 48);
  e.writeUInt32LE(4344, 52);
  return e;
}

test('an IPv4 retransmission record and its flow', () => {
  const b = record(4);
  const r = decodeRetrans(new DataView(b.buffer, b.byteOffset, b.length), 0, b.length);
  assert.equal(r.tsNs, 2 * 4294967296 + 0x89abcdef);
  assert.deepEqual([r.family, r.srcPort, r.dstPort, r.state, r.tcpFlags, r.segs, r.len], [4, 43210, 443, 1, 0x18, 3, 4344]);
  const f = createRetransDecoder({ clock: kernelClock(0) })(new DataView(b.buffer, b.byteOffset, b.length), 0, b.length);
  assert.deepEqual([f.srcIp, f.dstIp, f.verdict, f.direction, f.packets, f.bytes, f.proto, f.tcpFlags], ['192.0.2.1', '198.51.100.7', 'RETRANSMISSION', 'EGRESS', 3, 4344, 6, 0x18]);
  assert.equal(f.timeMs, r.tsNs / 1e6, 'kernel time, converted');
});

test('an IPv6 retransmission record', () => {
  const b = record(6);
  const decode = createRetransDecoder({ clock: kernelClock(0) });
  const f = decode(new DataView(b.buffer), 0, b.length);
  assert.deepEqual([f.srcIp, f.dstIp, f.ipVersion], ['2001:db8::1', '2001:db8::2', 6]);
  assert.equal(decode(new DataView(b.buffer), 0, b.length).srcIp, f.srcIp);
  assert.throws(() => decodeRetrans(new DataView(b.buffer), 0, 20));
  assert.throws(() => decode(new DataView(b.buffer), 0, 20), /20 bytes/);
});

test('counter deltas from kernel totals', () => {
  const d = deltaTracker();
  assert.equal(d(5), 5);
  assert.equal(d(9), 4);
  assert.equal(d(9), 0);
  assert.equal(d(2), 2); // the object was reloaded: totals restart
});
