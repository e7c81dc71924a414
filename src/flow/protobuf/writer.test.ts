/**
 * The shared protobuf writer against the wire format's definitions, computed another way: varints
 * from BigInt (negative numbers as int64's 64-bit two's complement), UTF-8 from Buffer, fixed64 from
 * Buffer.writeBigUInt64LE; sizes against what was written. Property tests (fast-check) over numbers
 * and strings of every length class, and a writer started too small so that it grows mid-write.
 * The encoders built on it are checked against protobufjs in src/server/hubble/frames.test.ts and
 * src/export/otlp/wire.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { fieldSize, int64Size, LEN, ProtoWriter, tag, utf8Length, varintSize } from './index.js';

/** The varint of `v` by the definition: seven bits a byte, low first, a negative number as uint64. */
function varintOf(v: number): number[] {
  let x = BigInt.asUintN(64, BigInt(Math.trunc(v)));
  const out: number[] = [];
  while (x >= 0x80n) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return out;
}

const written = (fill: (w: ProtoWriter) => void, size = 1): Buffer => {
  const w = new ProtoWriter(size);
  fill(w);
  return w.copy();
};

test('varints: the definition\'s bytes for every size class, negatives as ten bytes, fractions truncated', () => {
  const edges = [0, 1, 127, 128, 255, 300, 16_383, 16_384, 0x7fffffff, 0x80000000, 0xffffffff, 2 ** 35, 2 ** 49 + 3, Number.MAX_SAFE_INTEGER, -1, -128, -(2 ** 31), Number.MIN_SAFE_INTEGER, 1.5, 300.75];
  for (const v of edges) {
    assert.deepEqual([...written((w) => w.varint(v))], varintOf(v), `varint ${v}`);
    assert.equal(int64Size(v), varintOf(v).length, `int64Size ${v}`);
  }
  fc.assert(fc.property(fc.oneof(fc.nat(), fc.maxSafeNat(), fc.maxSafeInteger(), fc.integer()), (v) => {
    const bytes = written((w) => w.varint(v));
    assert.deepEqual([...bytes], varintOf(v));
    assert.equal(int64Size(v), bytes.length);
    if (v >= 0) assert.equal(varintSize(v), bytes.length);
  }));
  assert.throws(() => int64Size(Number.NaN), RangeError);
  assert.throws(() => int64Size(Number.POSITIVE_INFINITY), RangeError);
});

test('strings: measured then written, and written then measured, are the UTF-8 bytes after their varint length', () => {
  const cases = ['', 'a', 'x'.repeat(63), 'x'.repeat(64), 'x'.repeat(127), 'x'.repeat(128), 'x'.repeat(20_000), 'naïve', 'ü'.repeat(100), 'é'.repeat(43), '🚀', `${'a'.repeat(126)}é`, 'NETFILTER_DROP-é-'.repeat(3)];
  const check = (s: string): void => {
    const utf8 = Buffer.from(s, 'utf8');
    assert.equal(utf8Length(s), utf8.length, `utf8Length of ${s.slice(0, 20)}`);
    const want = Buffer.concat([Buffer.from(varintOf(utf8.length)), utf8]);
    assert.ok(written((w) => w.string(s)).equals(want), `string() of ${s.length} chars`);
    const len = utf8Length(s);
    assert.ok(written((w) => { w.varint(len); w.str(s, len); }).equals(want), `str() of ${s.length} chars`);
    assert.equal(fieldSize(len), 1 + want.length);
  };
  for (const s of cases) check(s);
  fc.assert(fc.property(fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 300 })), check));
});

test('begin/end: the body\'s length before it, the body moved when the length takes more than a byte', () => {
  for (const n of [0, 1, 127, 128, 129, 16_383, 16_384, 70_000]) {
    const body = Buffer.alloc(n, 0x5a);
    const got = written((w) => {
      w.byte(tag(3, LEN));
      const at = w.begin();
      w.bytes(body);
      w.end(at);
      w.byte(0x01);
    });
    assert.ok(got.equals(Buffer.concat([Buffer.from([tag(3, LEN), ...varintOf(n)]), body, Buffer.from([0x01])])), `body of ${n}`);
  }
  // Nested: an outer body whose inner body's length grows to two bytes.
  const inner = 'y'.repeat(200);
  const got = written((w) => {
    const outer = w.begin();
    w.string(inner);
    w.end(outer);
  });
  const innerBytes = Buffer.concat([Buffer.from(varintOf(200)), Buffer.from(inner)]);
  assert.ok(got.equals(Buffer.concat([Buffer.from(varintOf(innerBytes.length)), innerBytes])));
});

test('fixed64, head, copy from an offset; a writer sized exactly never grows, one sized small grows', () => {
  for (const v of [0n, 1n, 1764151201123456789n, 18446744073709551615n, -1n]) {
    const want = Buffer.alloc(8);
    want.writeBigUInt64LE(BigInt.asUintN(64, v));
    assert.ok(written((w) => w.fixed64(v)).equals(want), `fixed64 ${v}`);
  }
  const exact = new ProtoWriter(fieldSize(300));
  const first = exact.buf;
  exact.head(tag(1, LEN), 300);
  exact.str('z'.repeat(300), 300);
  assert.equal(exact.buf, first);
  assert.equal(exact.pos, exact.buf.length);
  // A short varint last, in the last bytes: still no growth.
  const tight = new ProtoWriter(3);
  const before = tight.buf;
  tight.byte(1);
  tight.varint(300);
  assert.equal(tight.buf, before);
  assert.equal(tight.pos, 3);
  const w = new ProtoWriter(1);
  w.byte(9);
  w.string('grows');
  assert.deepEqual([...w.copy(1)], [5, ...Buffer.from('grows')]);
});
