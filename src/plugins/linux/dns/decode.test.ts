import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelClock } from '../ebpf-shared/clock.js';
import { countMessages, decodeDnsEvent, dnsFlow, tryDecodeDnsEvent } from './decode.js';
import { dnsEvent, dnsFrame, dnsQuery, dnsResponse } from './fixtures.js';

const dv = (b: Buffer) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const decode = (e: Buffer) => decodeDnsEvent(dv(e), 0, e.length);

test('UDP over IPv4: addresses, ports, message', () => {
  const r = decode(dnsEvent(dnsFrame(dnsQuery(1, 'svc.cluster.local')), { outgoing: true }));
  assert.equal(r.family, 4);
  assert.equal(r.proto, 17);
  assert.equal(r.srcIp, '10.0.0.1');
  assert.equal(r.dstIp, '10.0.0.53');
  assert.equal(r.srcPort, 40000);
  assert.equal(r.dstPort, 53);
  assert.equal(r.outgoing, true);
  assert.equal(r.message.questions[0]?.name, 'svc.cluster.local');
});

test('UDP over IPv6 and TCP with its length prefix', () => {
  const r6 = decode(dnsEvent(dnsFrame(dnsQuery(2, 'v6.test', 28), { ipVersion: 6 })));
  assert.equal(r6.family, 6);
  assert.equal(r6.srcIp, 'fd00::1');
  assert.equal(r6.message.questions[0]?.type, 28);
  const q = dnsQuery(3, 'tcp.test');
  const rt = decode(dnsEvent(dnsFrame(dnsResponse(q, ['192.0.2.9']), { tcp: true, response: true })));
  assert.equal(rt.proto, 6);
  assert.equal(rt.srcPort, 53);
  assert.equal(rt.message.isResponse, true);
  assert.equal(rt.message.answers[0]?.data, '192.0.2.9');
});

test('a record cut at the capture length still counts', () => {
  const q = dnsQuery(4, 'long.test');
  const frame = dnsFrame(dnsResponse(q, Array.from({ length: 80 }, (_, i) => `198.51.100.${i}`)));
  assert.ok(frame.length > 1024);
  const r = decode(dnsEvent(frame));
  assert.equal(r.message.isResponse, true);
  assert.equal(r.message.cut, true);
  assert.equal(r.message.answerCount, 80);
});

test('not DNS: tryDecode gives undefined', () => {
  const e = dnsEvent(dnsFrame(Buffer.from([1, 2, 3])));
  assert.equal(tryDecodeDnsEvent(dv(e), 0, e.length), undefined);
  assert.equal(tryDecodeDnsEvent(dv(Buffer.alloc(10)), 0, 10), undefined);
});

test('counts and flows: requests leave, responses arrive', () => {
  const q = dnsQuery(5, 'a.test');
  const rq = decode(dnsEvent(dnsFrame(q)));
  const rs = decode(dnsEvent(dnsFrame(dnsResponse(q, ['192.0.2.1']), { response: true })));
  assert.deepEqual(countMessages([rq, rs, rs]), { requests: 1, responses: 2 });
  const clock = kernelClock(1000);
  const f = dnsFlow(rs, clock);
  assert.equal(f.timeMs, clock.toMs(rs.tsNs), 'kernel time, converted');
  assert.equal(f.verdict, 'DNS');
  assert.equal(f.direction, 'INGRESS');
  assert.deepEqual(f.dns, { query: 'a.test.', qtype: 'A', rcode: 'NOERROR', answers: ['192.0.2.1'], isResponse: true, numAnswers: 1 });
  assert.equal(dnsFlow(rq, clock).direction, 'EGRESS');
});
