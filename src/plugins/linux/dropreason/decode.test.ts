import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelClock } from '../ebpf-shared/clock.js';
import { DROP_EVENT_SIZE, createDropDecoder, decodeDropKey, reasonNames } from './decode.js';
import { dropreasonConfig } from './config.js';
import { notDropRodata } from './index.js';

const kernel = new Map([[2, 'SKB_DROP_REASON_NOT_SPECIFIED'], [3, 'SKB_DROP_REASON_NO_SOCKET'], [12, 'SKB_DROP_REASON_NETFILTER_DROP'], [1, 'SKB_CONSUMED']]);

test("reason names are the kernel's, without its prefix", () => {
  const name = reasonNames(kernel);
  assert.equal(name(12), 'NETFILTER_DROP');
  assert.equal(name(3), 'NO_SOCKET');
  assert.equal(name(1), 'CONSUMED');
  assert.equal(name(999), 'REASON_999');
});

test('the map key: reason, direction', () => {
  const b = Buffer.alloc(8);
  b.writeUInt32LE(12, 0);
  b.writeUInt32LE(2, 4);
  assert.deepEqual(decodeDropKey(b), { reason: 12, direction: 2 });
});

test('a drop event becomes a DROPPED flow with the reason name', () => {
  const e = Buffer.alloc(DROP_EVENT_SIZE + 8);
  const o = 8; // inside a larger buffer
  e.writeBigUInt64LE(5n, o);
  e.writeUInt32LE(3, o + 8);
  e.writeUInt32LE(1, o + 12);
  e.writeUInt32LE(84, o + 16);
  e.writeUInt32LE(7, o + 20);
  Buffer.from([10, 1, 2, 3]).copy(e, o + 24);
  Buffer.from([10, 4, 5, 6]).copy(e, o + 40);
  e.writeUInt16LE(5353, o + 56);
  e.writeUInt16LE(9999, o + 58);
  e[o + 60] = 4;
  e[o + 61] = 17;
  const decode = createDropDecoder({ reasonName: reasonNames(kernel), clock: kernelClock(1000) });
  const f = decode(new DataView(e.buffer, e.byteOffset, e.length), o, DROP_EVENT_SIZE);
  assert.deepEqual([f.srcIp, f.dstIp, f.srcPort, f.dstPort, f.proto, f.ipVersion], ['10.1.2.3', '10.4.5.6', 5353, 9999, 17, 4]);
  assert.equal(f.timeMs, 1000 + 5 / 1e6, 'kernel time, converted');
  assert.equal(f.verdict, 'DROPPED');
  assert.equal(f.dropReason, 'NO_SOCKET');
  assert.deepEqual([f.direction, f.observationPoint], ['INGRESS', 'FROM_NETWORK']);
  assert.equal(f.bytes, 84);
  assert.equal(f.packets, 1);
  assert.throws(() => decode(new DataView(e.buffer), 0, 10), /10 bytes/);
  e.writeUInt32LE(2, o + 12);
  e[o + 60] = 6;
  Buffer.from('fd000000000000000000000000000001', 'hex').copy(e, o + 24);
  const six = decode(new DataView(e.buffer, e.byteOffset, e.length), o, DROP_EVENT_SIZE);
  assert.deepEqual([six.srcIp, six.ipVersion, six.direction, six.observationPoint], ['fd00::1', 6, 'EGRESS', 'TO_NETWORK']);
});

test('dropReasonNames retina: Retina values where one corresponds, the kernel name otherwise', () => {
  const name = reasonNames(kernel, 'retina');
  assert.equal(name(12), 'IPTABLE_RULE_DROP');
  assert.equal(name(2), 'UNKNOWN_DROP');
  assert.equal(name(3), 'NO_SOCKET');
  assert.equal(name(999), 'REASON_999');
  assert.equal(reasonNames(kernel)(12), 'NETFILTER_DROP', 'kernel names by default');
});

test('dropReasonNames retina: pod-level drop flows (adv_drop_*) carry the Retina value too', () => {
  const e = Buffer.alloc(DROP_EVENT_SIZE);
  e.writeUInt32LE(12, 8);
  e[60] = 4;
  const decode = createDropDecoder({ reasonName: reasonNames(kernel, 'retina'), clock: kernelClock(0) });
  assert.equal(decode(new DataView(e.buffer, e.byteOffset, e.length), 0, DROP_EVENT_SIZE).dropReason, 'IPTABLE_RULE_DROP');
});

test('dropReasonNames is validated: kernel or retina', () => {
  const spec = dropreasonConfig.dropReasonNames;
  assert.equal(spec.default, 'kernel');
  assert.equal(spec.parse('retina'), 'retina');
  assert.throws(() => spec.parse('Retina-ish'));
  assert.match(spec.allowed, /kernel.*retina/);
});

test("not drops are skipped by the kernel's values for SKB_NOT_DROPPED_YET and SKB_CONSUMED, where it has them", () => {
  const v6 = new Map([[0, 'SKB_NOT_DROPPED_YET'], [1, 'SKB_CONSUMED'], [2, 'SKB_DROP_REASON_NOT_SPECIFIED']]);
  assert.deepEqual(notDropRodata(v6), { not_a_drop_0: 0, not_a_drop_1: 1 });
  // 5.17: the enum starts at NOT_SPECIFIED = 0, NO_SOCKET = 1; both are drops.
  const v5_17 = new Map([[0, 'SKB_DROP_REASON_NOT_SPECIFIED'], [1, 'SKB_DROP_REASON_NO_SOCKET']]);
  assert.deepEqual(notDropRodata(v5_17), { not_a_drop_0: 0xffffffff, not_a_drop_1: 0xffffffff });
});
