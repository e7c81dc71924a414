/**
 * A protobuf encoder for plain objects in the @grpc/proto-loader convention (enums as names, 64-bit
 * integers as numbers, oneofs as the set field), driven by the descriptors proto-loader already
 * holds: GetFlows' hot path. protobufjs's serializer (fromObject, then encode through a linked list
 * of writer ops, then a copy) costs 10-30 µs for a 350-byte GetFlowsResponse on this machine; this
 * one writes straight into one growing buffer, the gRPC length prefix included, in a few µs.
 * A frozen sub-message (the mapping freezes each endpoint's objects, shared by its flows) is written
 * once and its bytes copied after: it cannot change.
 * It writes every field the object sets (as protobufjs does: a set zero is written), skips keys the
 * message does not have (the oneof names proto-loader adds), and throws on what it does not know (a
 * field type it does not write, an enum name the proto lacks), so that the caller falls back to
 * protobufjs. frames.test.ts decodes its output with protobufjs against protobufjs's own.
 */
import type { PackageDefinition } from '@grpc/proto-loader';
import { resolveTypeName as resolve } from '../../flow/hubble/index.js';

type Kind = 'string' | 'bool' | 'varint' | 'sint' | 'enum' | 'message' | 'double' | 'float' | 'bytes';

interface Field {
  readonly tag: number;
  readonly kind: Kind;
  readonly repeated: boolean;
  readonly num: number;
  /** enum: name → number. */
  readonly values?: ReadonlyMap<string, number>;
  /** message: its plan (filled once every type is planned). */
  sub?: Plan;
}

type Plan = Map<string, Field>;

interface Descriptor {
  readonly name: string;
  readonly number: number;
  readonly label: string;
  readonly type: string;
  readonly typeName: string;
}

const KINDS: Readonly<Record<string, Kind>> = {
  TYPE_STRING: 'string', TYPE_BOOL: 'bool', TYPE_UINT32: 'varint', TYPE_INT32: 'varint', TYPE_INT64: 'varint', TYPE_UINT64: 'varint',
  TYPE_SINT32: 'sint', TYPE_SINT64: 'sint', TYPE_ENUM: 'enum', TYPE_MESSAGE: 'message', TYPE_DOUBLE: 'double', TYPE_FLOAT: 'float', TYPE_BYTES: 'bytes',
};

export type Encoder = (msg: Record<string, unknown>) => Buffer;

/** An encoder of message `type` (e.g. 'observer.GetFlowsResponse') whose output is one gRPC frame (5-byte prefix, then the message). */
export function createFrameEncoder(def: PackageDefinition, type: string): Encoder {
  const plans = new Map<string, Plan>();
  const plan = (name: string): Plan => {
    const known = plans.get(name);
    if (known) return known;
    const d = def[name] as { format?: string; type?: { field?: Descriptor[] } } | undefined;
    if (d?.format !== 'Protocol Buffer 3 DescriptorProto') throw new Error(`${name} is not a message`);
    const p: Plan = new Map();
    plans.set(name, p);
    for (const f of d.type?.field ?? []) {
      const kind = KINDS[f.type];
      if (kind === undefined) continue; // a field type we never write: setting it throws below
      const wire = kind === 'message' || kind === 'string' || kind === 'bytes' ? 2 : kind === 'double' ? 1 : kind === 'float' ? 5 : 0;
      const field: Field = { tag: f.number * 8 + wire, kind, repeated: f.label === 'LABEL_REPEATED', num: f.number };
      if (kind === 'enum') {
        const e = def[resolve(def, name, f.typeName)] as { type: { value: { name: string; number: number }[] } };
        (field as { values?: Map<string, number> }).values = new Map(e.type.value.map((v) => [v.name, v.number]));
      }
      p.set(f.name, field);
      if (kind === 'message') field.sub = plan(resolve(def, name, f.typeName));
    }
    return p;
  };
  const root = plan(type);

  let buf = Buffer.allocUnsafe(4096);
  let pos = 0;
  const room = (n: number): void => {
    if (pos + n <= buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + n));
    buf.copy(bigger, 0, 0, pos);
    buf = bigger;
  };
  const varint = (v: number): void => {
    room(10);
    if (v < 0x80 && v >= 0) {
      buf[pos++] = v;
      return;
    }
    if (v < 0) {
      // Negative int32/int64: ten bytes of two's complement.
      let b = BigInt.asUintN(64, BigInt(Math.trunc(v)));
      while (b >= 0x80n) {
        buf[pos++] = Number(b & 0x7fn) | 0x80;
        b >>= 7n;
      }
      buf[pos++] = Number(b);
      return;
    }
    while (v > 0x7fffffff) {
      buf[pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    while (v >= 0x80) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[pos++] = v;
  };
  const varintSize = (v: number): number => {
    let n = 1;
    while (v >= 0x80) {
      v = Math.floor(v / 0x80);
      n++;
    }
    return n;
  };
  /** Reserves one length byte for a length-delimited body: `end` (after the body) writes the length there. */
  const begin = (): number => {
    room(1);
    return pos++;
  };
  /** Writes the length of the body since `begin` answered `at` (moving the body when the length needs more than a byte). */
  const end = (at: number): void => {
    const len = pos - at - 1;
    if (len < 0x80) {
      buf[at] = len;
      return;
    }
    const extra = varintSize(len) - 1;
    room(extra + 10); // the varint below then never grows the buffer (pos is moved back meanwhile)
    buf.copyWithin(at + 1 + extra, at + 1, pos);
    const after = pos + extra;
    pos = at;
    varint(len);
    pos = after;
  };
  /**
   * A string field's length and bytes. Short ASCII strings (names, IPs, labels: nearly all of a flow's) are
   * copied char by char, whose length is known before: no native call, no moving. Others go through Buffer's UTF-8 writer.
   */
  const string = (s: string): void => {
    const len = s.length;
    room(len * 3 + 6);
    if (len < 0x80) {
      const at = pos + 1;
      let i = 0;
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[at + i] = c;
      }
      if (i === len) {
        buf[pos] = len;
        pos = at + len;
        return;
      }
    }
    const at = begin();
    pos += buf.write(s, pos, 'utf8');
    end(at);
  };
  const scalar = (f: Field, v: unknown): void => {
    switch (f.kind) {
      case 'string': {
        if (typeof v !== 'string') throw new TypeError(`field ${f.num}: not a string`);
        string(v);
        return;
      }
      case 'bool':
        varint(v ? 1 : 0);
        return;
      case 'varint': {
        const n = Number(v);
        if (!Number.isFinite(n)) throw new TypeError(`field ${f.num}: not a number`);
        varint(n);
        return;
      }
      case 'enum': {
        const n = typeof v === 'number' ? v : f.values?.get(v as string);
        if (n === undefined) throw new TypeError(`field ${f.num}: no enum value ${String(v)}`);
        varint(n);
        return;
      }
      case 'message': {
        const o = v as Record<string, unknown>;
        if (Object.isFrozen(o)) {
          frozen(f.sub as Plan, o);
          return;
        }
        const at = begin();
        message(f.sub as Plan, o);
        end(at);
        return;
      }
      default:
        throw new TypeError(`field ${f.num}: ${f.kind} is not written by this encoder`);
    }
  };
  /**
   * A frozen message cannot change: its length and bytes are written once and copied after (the flows of one
   * endpoint share theirs).
   */
  const frozenBodies = new WeakMap<object, { readonly plan: Plan; readonly bytes: Buffer }>();
  const frozen = (p: Plan, obj: Record<string, unknown>): void => {
    const known = frozenBodies.get(obj);
    const bytes = known?.plan === p ? known.bytes : undefined;
    if (bytes === undefined) {
      const from = pos;
      const at = begin();
      message(p, obj);
      end(at);
      frozenBodies.set(obj, { plan: p, bytes: Buffer.from(buf.subarray(from, pos)) });
      return;
    }
    room(bytes.length);
    bytes.copy(buf, pos);
    pos += bytes.length;
  };
  const message = (p: Plan, obj: Record<string, unknown>): void => {
    for (const key in obj) {
      const v = obj[key];
      if (v === undefined || v === null) continue;
      const f = p.get(key);
      if (f === undefined) continue;
      if (f.repeated) {
        if (!Array.isArray(v)) throw new TypeError(`field ${f.num}: not a list`);
        if (f.kind === 'string' || f.kind === 'message' || f.kind === 'bytes') {
          for (const item of v as unknown[]) {
            varint(f.tag);
            scalar(f, item);
          }
        } else if (v.length > 0) {
          // proto3 packs repeated numbers.
          varint(f.num * 8 + 2);
          const at = begin();
          for (const item of v as unknown[]) scalar(f, item);
          end(at);
        }
        continue;
      }
      varint(f.tag);
      scalar(f, v);
    }
  };
  return (msg) => {
    pos = 5;
    message(root, msg);
    const out = Buffer.allocUnsafe(pos);
    buf.copy(out, 0, 0, pos);
    out[0] = 0;
    out.writeUInt32BE(pos - 5, 1);
    return out;
  };
}
