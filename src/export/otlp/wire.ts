/**
 * ExportLogsServiceRequest in protobuf wire format, written straight into one Buffer (src/flow/protobuf's
 * ProtoWriter, the writer the Hubble encoder uses too): two passes (sizes, then bytes), the body's
 * UTF-8 written once. Why not @grpc/proto-loader's serializer
 * (protobufjs), which the response still goes through: it builds a message object per record,
 * attribute and value (fromObject) and then encodes them, 20-70 µs of CPU a record on the test VM
 * (bench/export/otlp.bench.ts), the whole OTLP sink's cost several times over; this one costs about
 * what the JSON encoding does. Only the fields of that request are written (the same request as
 * test/export/otlp-proto-request.ts's proto-loader object: wire.test.ts compares the bytes protobufjs
 * writes for it and decodes ours; the collector tests are the oracle).
 *
 * Field numbers (opentelemetry-proto v1, proto/opentelemetry/...):
 *   ExportLogsServiceRequest.resource_logs 1; ResourceLogs.resource 1, .scope_logs 2;
 *   Resource.attributes 1; ScopeLogs.scope 1, .log_records 2; InstrumentationScope.name 1, .version 2;
 *   LogRecord.time_unix_nano 1 (fixed64), .body 5, .attributes 6, .observed_time_unix_nano 11 (fixed64);
 *   KeyValue.key 1, .value 2; AnyValue.string_value 1, .int_value 3 (int64).
 */
import { fieldSize, I64, int64Size, LEN, ProtoWriter, tag, utf8Length, VARINT } from '../../flow/protobuf/index.js';
import { resourceAttributes, type OtlpLogRecord, type OtlpResourceInfo } from './encode.js';

type Attr = readonly [string, string | number];

const T_1_LEN = tag(1, LEN);
const T_2_LEN = tag(2, LEN);
const T_TIME = tag(1, I64); // fixed64
const T_OBSERVED = tag(11, I64);
const T_BODY = tag(5, LEN);
const T_ATTR = tag(6, LEN);
const T_INT = tag(3, VARINT); // int64

interface Sized {
  /** The KeyValue's length, its key's and its value message's. */
  kv: number;
  key: number;
  value: number;
  /** The string value's byte length. */
  str: number;
}

function sizeAttr([key, v]: Attr): Sized {
  const k = utf8Length(key);
  let value: number;
  let str = 0;
  if (typeof v === 'number') {
    value = 1 + int64Size(v);
  } else {
    str = utf8Length(v);
    value = fieldSize(str);
  }
  return { kv: fieldSize(k) + fieldSize(value), key: k, value, str };
}

function writeAttr(out: ProtoWriter, [key, v]: Attr, s: Sized): void {
  out.head(T_1_LEN, s.key);
  out.str(key, s.key);
  out.head(T_2_LEN, s.value);
  if (typeof v === 'number') {
    out.byte(T_INT);
    out.varint(v);
  } else {
    out.head(T_1_LEN, s.str);
    out.str(v, s.str);
  }
}

/** The ExportLogsServiceRequest of `records` (one resource, one scope: service.name, service.version and k8s.node.name; SCOPE_NAME). */
export function encodeLogsRequest(records: readonly OtlpLogRecord[], res: OtlpResourceInfo, scopeName: string): Buffer {
  // Pass 1: sizes.
  const rAttrs: Attr[] = resourceAttributes(res);
  const rSized = rAttrs.map(sizeAttr);
  const resourceLen = rSized.reduce((n, s) => n + fieldSize(s.kv), 0);
  const nameLen = utf8Length(scopeName);
  const versionLen = utf8Length(res.serviceVersion);
  const scopeLen = fieldSize(nameLen) + fieldSize(versionLen);
  const sized: Sized[][] = new Array(records.length);
  const bodyLens: number[] = new Array(records.length);
  const recLens: number[] = new Array(records.length);
  let scopeLogsLen = fieldSize(scopeLen);
  for (let i = 0; i < records.length; i++) {
    const r = records[i] as OtlpLogRecord;
    const b = utf8Length(r.body);
    let len = 9 + 9 + fieldSize(fieldSize(b));
    const s = r.attributes.map(sizeAttr);
    for (const a of s) len += fieldSize(a.kv);
    sized[i] = s;
    bodyLens[i] = b;
    recLens[i] = len;
    scopeLogsLen += fieldSize(len);
  }
  const resourceLogsLen = fieldSize(resourceLen) + fieldSize(scopeLogsLen);
  const out = new ProtoWriter(fieldSize(resourceLogsLen));
  // Pass 2: bytes.
  out.head(T_1_LEN, resourceLogsLen);
  out.head(T_1_LEN, resourceLen);
  for (let i = 0; i < rAttrs.length; i++) {
    out.head(T_1_LEN, (rSized[i] as Sized).kv);
    writeAttr(out, rAttrs[i] as Attr, rSized[i] as Sized);
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
    out.fixed64(BigInt(r.timeUnixNano));
    const b = bodyLens[i] as number;
    out.head(T_BODY, fieldSize(b));
    out.head(T_1_LEN, b);
    out.str(r.body, b);
    const s = sized[i] as Sized[];
    for (let k = 0; k < s.length; k++) {
      out.head(T_ATTR, (s[k] as Sized).kv);
      writeAttr(out, r.attributes[k] as Attr, s[k] as Sized);
    }
    out.byte(T_OBSERVED);
    out.fixed64(BigInt(r.observedTimeUnixNano));
  }
  if (out.pos !== out.buf.length) throw new Error(`OTLP encoder: wrote ${out.pos} of ${out.buf.length} bytes`);
  return out.buf;
}
