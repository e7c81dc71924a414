import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dnsQuery, dnsResponse, encodeName } from './fixtures.js';
import { DnsParseError, dnsRcodeName, dnsTypeName, parseDns } from './parser.js';

const dv = (b: Buffer) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const parse = (b: Buffer) => parseDns(dv(b), 0, b.length);

test('a query: id, question name and type, not a response', () => {
  const m = parse(dnsQuery(0x1234, 'example.com', 28));
  assert.equal(m.id, 0x1234);
  assert.equal(m.isResponse, false);
  assert.deepEqual(m.questions, [{ name: 'example.com', type: 28 }]);
  assert.equal(m.answers.length, 0);
  assert.equal(m.cut, false);
});

test('a response with compressed answer names', () => {
  const m = parse(dnsResponse(dnsQuery(7, 'a.example.org'), ['192.0.2.1', '192.0.2.2']));
  assert.equal(m.isResponse, true);
  assert.equal(m.rcode, 0);
  assert.equal(m.answerCount, 2);
  assert.deepEqual(m.answers.map((a) => [a.name, a.type, a.ttl, a.data]), [
    ['a.example.org', 1, 3600, '192.0.2.1'],
    ['a.example.org', 1, 3600, '192.0.2.2'],
  ]);
});

test('rcode and type names', () => {
  assert.equal(parse(dnsResponse(dnsQuery(1, 'nope.test'), [], 3)).rcode, 3);
  assert.equal(dnsRcodeName(3), 'NXDOMAIN');
  assert.equal(dnsRcodeName(0), 'NOERROR');
  assert.equal(dnsTypeName(28), 'AAAA');
  assert.equal(dnsTypeName(65), 'HTTPS');
  assert.equal(dnsTypeName(4242), 'TYPE4242');
});

test('AAAA and CNAME answers', () => {
  const q = dnsQuery(9, 'www.example.net', 28);
  const h = Buffer.from(q.subarray(0, 12));
  h.writeUInt16BE(0x8180, 2);
  h.writeUInt16BE(2, 6);
  const cname = Buffer.concat([Buffer.from([0xc0, 0x0c, 0, 5, 0, 1, 0, 0, 0, 60]), Buffer.from([0, 0])]);
  const target = encodeName('edge.example.net');
  cname.writeUInt16BE(target.length, 10);
  const aaaa = Buffer.concat([Buffer.from([0xc0, 0x0c, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16]), Buffer.from('20010db8000000000000000000000001', 'hex')]);
  const m = parse(Buffer.concat([h, q.subarray(12), cname, target, aaaa]));
  assert.deepEqual(m.answers.map((a) => a.data), ['edge.example.net', '2001:db8::1']);
});

test('a message cut by the capture keeps the complete part', () => {
  const full = dnsResponse(dnsQuery(3, 'cut.example'), ['198.51.100.1', '198.51.100.2']);
  const m = parse(full.subarray(0, full.length - 3));
  assert.equal(m.cut, true);
  assert.equal(m.answerCount, 2);
  assert.equal(m.answers.length, 1);
  assert.equal(m.questions[0]?.name, 'cut.example');
});

test('garbage is rejected, never read past the window', () => {
  assert.throws(() => parse(Buffer.alloc(5)), DnsParseError);
  const loop = Buffer.concat([Buffer.from([0, 1, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from([0xc0, 12, 0, 1, 0, 1])]);
  assert.throws(() => parse(loop), DnsParseError);
  const badLabel = Buffer.concat([Buffer.from([0, 1, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from([0x80, 0, 0, 1, 0, 1])]);
  assert.throws(() => parse(badLabel), DnsParseError);
  const badOpcode = dnsQuery(1, 'x.y');
  badOpcode[2] = 0x78;
  assert.throws(() => parse(badOpcode), DnsParseError);
  // A window inside a larger buffer: the parser stops at its end.
  const q = dnsQuery(5, 'inside.test');
  const big = Buffer.concat([Buffer.alloc(7), q, Buffer.alloc(9, 0xff)]);
  assert.equal(parseDns(dv(big), 7, q.length).questions[0]?.name, 'inside.test');
});

test('labels with dots or unprintable bytes are escaped', () => {
  const name = Buffer.concat([Buffer.from([3, 0x61, 0x2e, 0x01, 0])]);
  const h = Buffer.alloc(12);
  h.writeUInt16BE(1, 4);
  const m = parse(Buffer.concat([h, name, Buffer.from([0, 1, 0, 1])]));
  assert.equal(m.questions[0]?.name, 'a\\046\\001');
});
