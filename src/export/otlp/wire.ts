/**
 * ExportLogsServiceRequest in protobuf wire format, written straight into one Buffer: two passes
 * (sizes, then bytes), the body's UTF-8 written once. Why not @grpc/proto-loader's serializer
 * (protobufjs), which the response still goes through: it builds a message object per record,
 * attribute and value (fromObject) and then encodes them, 20-70 µs of CPU a record on the test VM
 * (bench/export/otlp.bench.ts), the whole OTLP sink's cost several times over; this one costs about
 * what the JSON encoding does. Only the fields toProtoRequest sets are written (the same request:
 * wire.test.ts decodes both with protobufjs and compares; the collector tests are the oracle).
 *
 * Field numbers (opentelemetry-proto v1, proto/opentelemetry/...):
 *   ExportLogsServiceRequest.resource_logs 1; ResourceLogs.resource 1, .scope_logs 2;
 *   Resource.attributes 1; ScopeLogs.scope 1, .log_records 2; InstrumentationScope.name 1, .version 2;
 *   LogRecord.time_unix_nano 1 (fixed64), .body 5, .attributes 6, .observed_time_unix_nano 11 (fixed64);
 *   KeyValue.key 1, .value 2; AnyValue.string_value 1, .int_value 3 (int64).
 */
import type { OtlpLogRecord, OtlpResourceInfo } from './encode.js';

type Attr = readonly [string, string | number];

const LEN = 2; // wire type: length-delimited
const tag = (field: number, wire: number): number => (field << 3) | wire;
const T_1_LEN = tag(1, LEN);
const T_2_LEN = tag(2, LEN);
const T_TIME = tag(1, 1); // fixed64
const T_OBSERVED = tag(11, 1);
const T_BODY = tag(5, LEN);
const T_ATTR = tag(6, LEN);
const T_INT = tag(3, 0); // varint

function varintLen(n: number): number {
  let len = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/** int64 as a varint: a negative value is its 64-bit two's complement (10 bytes). */
function int64(v: number): bigint | number {
  return v >= 0 && Number.isSafeInteger(v) ? v : BigInt.asUintN(64, BigInt(Math.trunc(v)));
}

function int64Len(v: bigint | number): number {
  if (typeof v === 'number') return varintLen(v);
  let len = 1;
  while (v >= 128n) {
    v >>= 7n;
    len++;
  }
  return len;
}

/** A short string is measured and written here, char by char when ASCII: a call into Buffer costs more. */
const SHORT = 64;
function strLen(s: string): number {
  if (s.length < SHORT) {
    let i = 0;
    while (i < s.length && s.charCodeAt(i) < 128) i++;
    if (i === s.length) return i;
  }
  return Buffer.byteLength(s, 'utf8');
}
/** Size of a length-delimited field (tag of one byte) holding `n` bytes. */
const fieldLen = (n: number): number => 1 + varintLen(n) + n;

interface Sized {
  /** The KeyValue's length, its key's and its value message's. */
  kv: number;
  key: number;
  value: number;
  /** The string value's byte length, or the int64. */
  str: number;
  int: bigint | number;
}

function sizeAttr([key, v]: Attr): Sized {
  const k = strLen(key);
  let value: number;
  let str = 0;
  let int: bigint | number = 0;
  if (typeof v === 'number') {
    int = int64(v);
    value = 1 + int64Len(int);
  } else {
    str = strLen(v);
    value = fieldLen(str);
  }
  return { kv: fieldLen(k) + fieldLen(value), key: k, value, str, int };
}

class Out {
  readonly buf: Buffer;
  pos = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  byte(b: number): void {
    this.buf[this.pos++] = b;
  }
  varint(n: number): void {
    while (n >= 128) {
      this.buf[this.pos++] = (n % 128) | 128;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }
  varint64(v: bigint | number): void {
    if (typeof v === 'number') return this.varint(v);
    while (v >= 128n) {
      this.buf[this.pos++] = Number(v & 127n) | 128;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }
  /** A length-delimited field's tag and length. */
  head(t: number, len: number): void {
    this.byte(t);
    this.varint(len);
  }
  str(s: string, len: number): void {
    if (len === s.length && len < SHORT) {
      // ASCII (strLen counted one byte a char).
      for (let i = 0; i < len; i++) this.buf[this.pos++] = s.charCodeAt(i);
      return;
    }
    this.pos += this.buf.write(s, this.pos, len, 'utf8');
  }
  fixed64(decimal: string): void {
    this.buf.writeBigUInt64LE(BigInt.asUintN(64, BigInt(decimal)), this.pos);
    this.pos += 8;
  }
  attr([key, v]: Attr, s: Sized): void {
    this.head(T_1_LEN, s.key);
    this.str(key, s.key);
    this.head(T_2_LEN, s.value);
    if (typeof v === 'number') {
      this.byte(T_INT);
      this.varint64(s.int);
    } else {
      this.head(T_1_LEN, s.str);
      this.str(v, s.str);
    }
  }
}

function resourceAttrs(res: OtlpResourceInfo): Attr[] {
  const a: Attr[] = [['service.name', res.serviceName]];
  if (res.serviceVersion) a.push(['service.version', res.serviceVersion]);
  if (res.nodeName) a.push(['k8s.node.name', res.nodeName]);
  return a;
}

/** The ExportLogsServiceRequest of `records` (one resource, one scope), as toProtoRequest describes it. */
export function encodeLogsRequest(records: readonly OtlpLogRecord[], res: OtlpResourceInfo, scopeName: string): Buffer {
  // Pass 1: sizes.
  const rAttrs = resourceAttrs(res);
  const rSized = rAttrs.map(sizeAttr);
  const resourceLen = rSized.reduce((n, s) => n + fieldLen(s.kv), 0);
  const nameLen = strLen(scopeName);
  const versionLen = strLen(res.serviceVersion);
  const scopeLen = fieldLen(nameLen) + fieldLen(versionLen);
  const sized: Sized[][] = new Array(records.length);
  const bodyLens: number[] = new Array(records.length);
  const recLens: number[] = new Array(records.length);
  let scopeLogsLen = fieldLen(scopeLen);
  for (let i = 0; i < records.length; i++) {
    const r = records[i] as OtlpLogRecord;
    const b = strLen(r.body);
    let len = 9 + 9 + fieldLen(fieldLen(b));
    const s = r.attributes.map(sizeAttr);
    for (const a of s) len += fieldLen(a.kv);
    sized[i] = s;
    bodyLens[i] = b;
    recLens[i] = len;
    scopeLogsLen += fieldLen(len);
  }
  const resourceLogsLen = fieldLen(resourceLen) + fieldLen(scopeLogsLen);
  const out = new Out(fieldLen(resourceLogsLen));
  // Pass 2: bytes.
  out.head(T_1_LEN, resourceLogsLen);
  out.head(T_1_LEN, resourceLen);
  for (let i = 0; i < rAttrs.length; i++) {
    out.head(T_1_LEN, (rSized[i] as Sized).kv);
    out.attr(rAttrs[i] as Attr, rSized[i] as Sized);
  }
  out.head(T_2_LEN, scopeLogsLen);
  out.head(T_1_LEN, scopeLen);
  out.head(T_1_LEN, nameLen);
  out.str(scopeName, nameLen);
  out.head(T_2_LEN, versionLen);
  out.str(res.serviceVersion, versionLen);
  for (let i = 0; i < records.length; i++) {
    const r = records[i] as OtlpLogRecord;
    out.head(T_2_LEN, recLens[i] as number);
    out.byte(T_TIME);
    out.fixed64(r.timeUnixNano);
    const b = bodyLens[i] as number;
    out.head(T_BODY, fieldLen(b));
    out.head(T_1_LEN, b);
    out.str(r.body, b);
    const s = sized[i] as Sized[];
    for (let k = 0; k < s.length; k++) {
      out.head(T_ATTR, (s[k] as Sized).kv);
      out.attr(r.attributes[k] as Attr, s[k] as Sized);
    }
    out.byte(T_OBSERVED);
    out.fixed64(r.observedTimeUnixNano);
  }
  if (out.pos !== out.buf.length) throw new Error(`OTLP encoder: wrote ${out.pos} of ${out.buf.length} bytes`);
  return out.buf;
}
