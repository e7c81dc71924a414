/**
 * Fuzzing the DNS message parser and the dns plugin's ring records (src/plugins/linux/dns): random
 * bytes, mutated valid messages, and a round trip through an encoder written here (names of
 * arbitrary bytes, compression pointers, A/AAAA/CNAME answers).
 */
import assert from 'node:assert/strict';
import { isIPv6 } from 'node:net';
import { DnsParseError, parseDns, tryParseDns, type DnsMessage } from '../../src/plugins/linux/dns/parser.js';
import { DNS_EVENT_HEADER, decodeDnsEvent, tryDecodeDnsEvent } from '../../src/plugins/linux/dns/decode.js';
import { bytes, embedded, fc, fuzzer, mutated, onlyThrows, timed, view } from './harness.js';

const fuzz = fuzzer(import.meta.url);

/** A name's text as the parser writes it: bytes outside '!'..'~' and '.' as \ddd. */
const labelText = (l: Uint8Array): string =>
  [...l].map((c) => (c === 0x2e || c < 0x21 || c > 0x7e ? `\\${c.toString().padStart(3, '0')}` : String.fromCharCode(c))).join('');

const encodeName = (labels: readonly Uint8Array[]): number[] => [...labels.flatMap((l) => [l.length, ...l]), 0];

const u16 = (n: number): number[] => [(n >> 8) & 255, n & 255];
const u32 = (n: number): number[] => [...u16(n >>> 16), ...u16(n & 0xffff)];

interface Answer {
  readonly type: 1 | 28 | 5;
  readonly ttl: number;
  readonly rdata: Uint8Array;
  /** CNAME target labels. */
  readonly target: readonly Uint8Array[];
}
interface Model {
  readonly id: number;
  readonly response: boolean;
  readonly rcode: number;
  readonly qname: readonly Uint8Array[];
  readonly qtype: number;
  readonly answers: readonly Answer[];
  /** Answers name the question by a compression pointer (0xc00c) instead of in full. */
  readonly compressed: boolean;
}

const label = fc.uint8Array({ minLength: 1, maxLength: 20 });
/** Names within 255 bytes on the wire. */
const labels = fc.array(label, { maxLength: 8 });

const answerArb: fc.Arbitrary<Answer> = fc.oneof(
  fc.record({ type: fc.constant(1 as const), ttl: fc.nat(), rdata: fc.uint8Array({ minLength: 4, maxLength: 4 }), target: fc.constant([]) }),
  fc.record({ type: fc.constant(28 as const), ttl: fc.nat(), rdata: fc.uint8Array({ minLength: 16, maxLength: 16 }), target: fc.constant([]) }),
  fc.record({ type: fc.constant(5 as const), ttl: fc.nat(), rdata: fc.constant(new Uint8Array()), target: labels }),
);

const modelArb: fc.Arbitrary<Model> = fc.record({
  id: fc.integer({ min: 0, max: 0xffff }),
  response: fc.boolean(),
  rcode: fc.integer({ min: 0, max: 15 }),
  qname: labels,
  qtype: fc.integer({ min: 0, max: 0xffff }),
  answers: fc.array(answerArb, { maxLength: 6 }),
  compressed: fc.boolean(),
});

function encode(m: Model): Uint8Array {
  const out: number[] = [...u16(m.id), ...u16((m.response ? 0x8000 : 0) | 0x0100 | m.rcode), ...u16(1), ...u16(m.answers.length), 0, 0, 0, 0];
  out.push(...encodeName(m.qname), ...u16(m.qtype), ...u16(1));
  for (const a of m.answers) {
    out.push(...(m.compressed ? [0xc0, 0x0c] : encodeName(m.qname)), ...u16(a.type), ...u16(1), ...u32(a.ttl));
    const rdata = a.type === 5 ? encodeName(a.target) : [...a.rdata];
    out.push(...u16(rdata.length), ...rdata);
  }
  return Uint8Array.from(out);
}

const ipv6Text = (b: Uint8Array): string => new URL(`http://[${[0, 2, 4, 6, 8, 10, 12, 14].map((i) => ((b[i] as number) * 256 + (b[i + 1] as number)).toString(16)).join(':')}]/`).hostname.slice(1, -1);

function expected(m: Model): Omit<DnsMessage, 'cut'> {
  const qname = m.qname.map(labelText).join('.');
  return {
    id: m.id, isResponse: m.response, opcode: 0, rcode: m.rcode, answerCount: m.answers.length,
    questions: [{ name: qname, type: m.qtype }],
    answers: m.answers.map((a) => ({
      name: qname, type: a.type, ttl: a.ttl,
      data: a.type === 1 ? [...a.rdata].join('.') : a.type === 28 ? ipv6Text(a.rdata) : a.target.map(labelText).join('.'),
    })),
  };
}

/** Output bounded by the parser's own limits whatever the input: 64 records of 255-byte names, each byte at most 4 characters. */
function assertBounded(m: DnsMessage | string): void {
  if (typeof m === 'string') return;
  assert.ok(m.questions.length <= 64 && m.answers.length <= 64, 'record count over the limit');
  for (const r of [...m.questions, ...m.answers]) assert.ok(r.name.length <= 255 * 4, `name of ${r.name.length} characters`);
  for (const a of m.answers) assert.ok(a.data.length <= 255 * 4, `data of ${a.data.length} characters`);
}

const parseBytes = (b: Uint8Array): DnsMessage | string => timed('tryParseDns', () => tryParseDns(view(b), 0, b.length));

fuzz('dns-message-random', bytes(600), (b) => {
  const m = parseBytes(b);
  assertBounded(m);
  const strict = onlyThrows([DnsParseError], () => parseDns(view(b), 0, b.length));
  assert.equal(strict.ok, typeof m !== 'string', 'parseDns and tryParseDns disagree');
});

fuzz('dns-message-roundtrip', modelArb, (model) => {
  const m = parseBytes(encode(model));
  assert.ok(typeof m !== 'string', `a valid message was refused: ${String(m)}`);
  const { cut, ...rest } = m;
  assert.equal(cut, false);
  assert.deepEqual(rest, expected(model));
  for (const a of m.answers) if (a.type === 28) assert.ok(isIPv6(a.data), a.data);
});

/** Mutated messages: never a throw, bounded output, and the same answer wherever the bytes sit in memory. */
fuzz('dns-message-mutated', fc.tuple(mutated(modelArb.map(encode)), fc.nat(64), fc.nat(64), fc.integer({ min: 0, max: 255 })), ([b, lead, trail, fill]) => {
  const m = parseBytes(b);
  assertBounded(m);
  const e = embedded(b, lead, trail, fill);
  assert.deepEqual(tryParseDns(e.v, e.off, b.length), m, 'the parser read outside its window');
});

// ---- dns_event ring records -------------------------------------------------------------------

interface Packet {
  readonly v6: boolean;
  readonly tcp: boolean;
  readonly dns: Uint8Array;
  /** IPv6 extension headers (hop-by-hop / destination options) before the transport header. */
  readonly ext: number;
}

function frame(p: Packet): Uint8Array {
  const l4: number[] = p.tcp
    ? [...u16(40000), ...u16(53), 0, 0, 0, 0, 0, 0, 0, 0, 5 << 4, 0x18, 0, 0, 0, 0, 0, 0, ...u16(p.dns.length), ...p.dns]
    : [...u16(40000), ...u16(53), ...u16(8 + p.dns.length), 0, 0, ...p.dns];
  const proto = p.tcp ? 6 : 17;
  let ip: number[];
  if (p.v6) {
    const ext: number[] = [];
    for (let i = 0; i < p.ext; i++) ext.push(i + 1 < p.ext ? 60 : proto, 0, 0, 0, 0, 0, 0, 0);
    ip = [0x60, 0, 0, 0, ...u16(ext.length + l4.length), p.ext ? 0 : proto, 64, 0xfd, ...new Array<number>(14).fill(0), 1, 0xfd, ...new Array<number>(14).fill(0), 0x53, ...ext];
  } else {
    ip = [0x45, 0, ...u16(20 + l4.length), 0, 0, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 53];
  }
  return Uint8Array.from([...new Array<number>(12).fill(0), ...(p.v6 ? [0x86, 0xdd] : [0x08, 0x00]), ...ip, ...l4]);
}

function dnsEvent(pkt: Uint8Array, l3Off = 14): Uint8Array {
  const head = [...new Array<number>(8).fill(0), ...u32le(pkt.length), ...u32le(pkt.length), ...u32le(3), l3Off & 255, l3Off >> 8, 0, 0];
  return Uint8Array.from([...head, ...pkt]);
}
function u32le(n: number): number[] {
  return [n & 255, (n >> 8) & 255, (n >> 16) & 255, n >>> 24];
}

const packetArb: fc.Arbitrary<Packet> = fc.record({ v6: fc.boolean(), tcp: fc.boolean(), dns: modelArb.map(encode), ext: fc.integer({ min: 0, max: 3 }) });

fuzz('dns-event-roundtrip', packetArb, (p) => {
  const rec = dnsEvent(frame(p));
  assert.equal(rec.length - DNS_EVENT_HEADER, frame(p).length);
  const r = timed('decodeDnsEvent', () => decodeDnsEvent(view(rec), 0, rec.length));
  assert.deepEqual(r.message, parseDns(view(p.dns), 0, p.dns.length));
  assert.equal(r.family, p.v6 ? 6 : 4);
  assert.equal(r.proto, p.tcp ? 6 : 17);
  assert.deepEqual([r.srcPort, r.dstPort], [40000, 53]);
  assert.deepEqual([r.srcIp, r.dstIp], p.v6 ? ['fd00::1', 'fd00::53'] : ['10.0.0.1', '10.0.0.53']);
});

/**
 * Records (valid ones mutated, random ones) read from a ring buffer where other records sit right
 * after: tryDecodeDnsEvent never throws, and decodes the same whatever the neighbouring bytes are
 * (it reads nothing outside [off, off + size)).
 */
const recordArb = fc.oneof(mutated(packetArb.map((p) => dnsEvent(frame(p)))), bytes(200));
fuzz('dns-event-mutated', fc.tuple(recordArb, fc.nat(32)), ([rec, lead]) => {
  const a = embedded(rec, lead, 2048, 0x00);
  const b = embedded(rec, lead, 2048, 0xff);
  const ra = timed('tryDecodeDnsEvent', () => tryDecodeDnsEvent(a.v, a.off, rec.length));
  const rb = tryDecodeDnsEvent(b.v, b.off, rec.length);
  assert.deepEqual(ra, rb, 'the decoder read outside its record');
  const exact = tryDecodeDnsEvent(view(rec), 0, rec.length);
  assert.deepEqual(exact, ra, 'the decoder depends on the bytes after its record');
  if (ra) assertBounded(ra.message);
  onlyThrows([DnsParseError], () => decodeDnsEvent(view(rec), 0, rec.length));
});
