/**
 * The protobuf wire format written by hand into one growing Buffer: the primitives both of our
 * hand-written encoders use (src/server/hubble/encode.ts: GetFlowsResponse frames from
 * @grpc/proto-loader objects; src/export/otlp/wire.ts: OTLP ExportLogsServiceRequests), here once.
 * Why by hand: protobufjs's serializer (fromObject, then a linked list of writer ops, then a copy)
 * costs 10-70 µs a message on the test VM against a few µs here (bench/hubble, bench/export).
 *
 * Two ways to write a length-delimited field, both here:
 * - measured first (`utf8Length`, `varintSize`, `int64Size`), then written: `head(tag, len)` and
 *   `str(s, len)`; an encoder that sizes every message in a first pass writes each byte once;
 * - written, then measured: `begin()` reserves one length byte and `end(at)` fills it in, moving
 *   the body in the rare case its length needs more; `string(s)` does this for a string.
 * Varints take any number: a negative one is written as int64's ten bytes of two's complement, a
 * fraction is truncated. Every write makes room first, so a writer built with the exact size never
 * grows and one built small grows by doubling.
 */

/** Wire types. */
export const VARINT = 0;
export const I64 = 1;
export const LEN = 2;
export const I32 = 5;

/** A field's tag (field number and wire type), as written before its value. */
export const tag = (field: number, wire: number): number => field * 8 + wire;

/** Bytes of a non-negative integer as a varint. */
export function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

/** Bytes of an int64 varint: a negative value takes ten (its 64-bit two's complement). */
export function int64Size(v: number): number {
  if (!Number.isFinite(v)) throw new RangeError(`${v} is not an int64`);
  return v < 0 ? 10 : varintSize(v);
}

/** Strings shorter than this are measured (and written) char by char when ASCII: a call into Buffer costs more. */
const SHORT = 64;

/** A string's length in UTF-8. */
export function utf8Length(s: string): number {
  if (s.length < SHORT) {
    let i = 0;
    while (i < s.length && s.charCodeAt(i) < 0x80) i++;
    if (i === s.length) return i;
  }
  return Buffer.byteLength(s, 'utf8');
}

/** Size of a length-delimited field (tag of one byte) holding `n` bytes. */
export const fieldSize = (n: number): number => 1 + varintSize(n) + n;

export class ProtoWriter {
  /** The bytes so far are `buf[0, pos)`; `buf` is replaced when it grows (read it after writing). */
  buf: Buffer;
  pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(Math.max(1, size));
  }

  /** Makes room for `n` more bytes. */
  room(n: number): void {
    if (this.pos + n > this.buf.length) this.#grow(n);
  }

  #grow(n: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.pos++] = b;
  }

  /** A varint; a negative number as int64's ten bytes, a fraction truncated. */
  varint(v: number): void {
    // Near the end, room for exactly this varint: a writer sized exactly must not grow.
    if (this.pos + 10 > this.buf.length) this.room(v < 0 ? 10 : varintSize(v));
    const b = this.buf;
    let p = this.pos;
    if (v < 0x80 && v >= 0) {
      b[p] = v;
      this.pos = p + 1;
      return;
    }
    if (v < 0) {
      let x = BigInt.asUintN(64, BigInt(Math.trunc(v)));
      while (x >= 0x80n) {
        b[p++] = Number(x & 0x7fn) | 0x80;
        x >>= 7n;
      }
      b[p++] = Number(x);
      this.pos = p;
      return;
    }
    while (v > 0x7fffffff) {
      b[p++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    while (v >= 0x80) {
      b[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[p++] = v;
    this.pos = p;
  }

  /** A length-delimited field's tag (one byte) and length. */
  head(t: number, len: number): void {
    this.byte(t);
    this.varint(len);
  }

  /** A string's bytes, its UTF-8 length `len` measured before (utf8Length). */
  str(s: string, len: number): void {
    this.room(len);
    if (len === s.length && len < SHORT) {
      // ASCII (utf8Length counted one byte a char).
      const b = this.buf;
      let p = this.pos;
      for (let i = 0; i < len; i++) b[p++] = s.charCodeAt(i);
      this.pos = p;
      return;
    }
    this.pos += this.buf.write(s, this.pos, len, 'utf8');
  }

  /**
   * A string's length and bytes, measured as it is written. Short ASCII strings (names, IPs, labels)
   * are copied char by char, their length known before: no native call, no move. Others go through
   * Buffer's UTF-8 writer between begin and end.
   */
  string(s: string): void {
    const len = s.length;
    this.room(len * 3 + 6);
    const b = this.buf;
    if (len < 0x80) {
      const at = this.pos + 1;
      let i = 0;
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        b[at + i] = c;
      }
      if (i === len) {
        b[this.pos] = len;
        this.pos = at + len;
        return;
      }
    }
    const at = this.begin();
    this.pos += b.write(s, this.pos, 'utf8');
    this.end(at);
  }

  /** Reserves one length byte for a length-delimited body: `end` (after the body) writes the length there. */
  begin(): number {
    this.room(1);
    return this.pos++;
  }

  /** Writes the length of the body since `begin` answered `at` (moving the body when the length needs more than a byte). */
  end(at: number): void {
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    const extra = varintSize(len) - 1;
    this.room(extra + 10); // the varint below then never grows the buffer (pos is moved back meanwhile)
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos);
    const after = this.pos + extra;
    this.pos = at;
    this.varint(len);
    this.pos = after;
  }

  /** Eight bytes little-endian (fixed64): `v` modulo 2^64. */
  fixed64(v: bigint): void {
    this.room(8);
    this.buf.writeBigUInt64LE(BigInt.asUintN(64, v), this.pos);
    this.pos += 8;
  }

  /** Bytes as they are (a sub-message written before). */
  bytes(src: Uint8Array): void {
    this.room(src.length);
    this.buf.set(src, this.pos);
    this.pos += src.length;
  }

  /** A copy of the bytes written from `from` (default 0) to here. */
  copy(from = 0): Buffer {
    const out = Buffer.allocUnsafe(this.pos - from);
    this.buf.copy(out, 0, from, this.pos);
    return out;
  }
}
