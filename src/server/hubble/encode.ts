/**
 * A protobuf encoder for plain objects in the @grpc/proto-loader convention (enums as names, 64-bit
 * integers as numbers, oneofs as the set field), driven by the descriptors proto-loader already
 * holds: GetFlows' hot path. protobufjs's serializer (fromObject, then encode through a linked list
 * of writer ops, then a copy) costs 10-30 µs for a 350-byte GetFlowsResponse on this machine; this
 * one writes straight into one growing buffer (src/flow/protobuf's ProtoWriter, the writer the OTLP
 * encoder uses too), the gRPC length prefix included, in a few µs.
 * A frozen sub-message (the mapping freezes each endpoint's objects, shared by its flows) is written
 * once and its bytes copied after: it cannot change.
 * It writes every field the object sets (as protobufjs does: a set zero is written), skips keys the
 * message does not have (the oneof names proto-loader adds), and throws on what it does not know (a
 * field type it does not write, an enum name the proto lacks), so that the caller falls back to
 * protobufjs. frames.test.ts decodes its output with protobufjs against protobufjs's own.
 */
import type { PackageDefinition } from '@grpc/proto-loader';
import { enumValues, planner, resolveTypeName as resolve, type FieldMask } from '../../flow/hubble/index.js';
import { I32, I64, LEN, ProtoWriter, tag, VARINT } from '../../flow/protobuf/index.js';

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

const KINDS: Readonly<Record<string, Kind>> = {
  TYPE_STRING: 'string', TYPE_BOOL: 'bool', TYPE_UINT32: 'varint', TYPE_INT32: 'varint', TYPE_INT64: 'varint', TYPE_UINT64: 'varint',
  TYPE_SINT32: 'sint', TYPE_SINT64: 'sint', TYPE_ENUM: 'enum', TYPE_MESSAGE: 'message', TYPE_DOUBLE: 'double', TYPE_FLOAT: 'float', TYPE_BYTES: 'bytes',
};

/**
 * `mask` (a compiled field mask over the message: src/flow/hubble/json.ts `mask`, the field names kept,
 * each with the mask below it or undefined for the whole field) writes only the masked fields, without
 * copying the object: GetFlows' field_mask (get-flows.ts).
 */
export type Encoder = (msg: Record<string, unknown>, mask?: FieldMask) => Buffer;

/** An encoder of message `type` (e.g. 'observer.GetFlowsResponse') whose output is one gRPC frame (5-byte prefix, then the message). */
export function createFrameEncoder(def: PackageDefinition, type: string): Encoder {
  const plan = planner<Plan>(def, () => new Map(), (p, name, descriptors, planOf) => {
    for (const f of descriptors) {
      const kind = KINDS[f.type];
      if (kind === undefined) continue; // a field type we never write: setting it throws below
      const wire = kind === 'message' || kind === 'string' || kind === 'bytes' ? LEN : kind === 'double' ? I64 : kind === 'float' ? I32 : VARINT;
      const field: Field = { tag: tag(f.number, wire), kind, repeated: f.label === 'LABEL_REPEATED', num: f.number };
      if (kind === 'enum') {
        (field as { values?: Map<string, number> }).values = new Map(enumValues(def, resolve(def, name, f.typeName)).map((v) => [v.name, v.number]));
      }
      p.set(f.name, field);
      if (kind === 'message') field.sub = planOf(resolve(def, name, f.typeName));
    }
  });
  const root = plan(type);

  const w = new ProtoWriter(4096);
  const scalar = (f: Field, v: unknown, mask?: FieldMask): void => {
    switch (f.kind) {
      case 'string': {
        if (typeof v !== 'string') throw new TypeError(`field ${f.num}: not a string`);
        w.string(v);
        return;
      }
      case 'bool':
        w.varint(v ? 1 : 0);
        return;
      case 'varint': {
        const n = Number(v);
        if (!Number.isFinite(n)) throw new TypeError(`field ${f.num}: not a number`);
        w.varint(n);
        return;
      }
      case 'enum': {
        const n = typeof v === 'number' ? v : f.values?.get(v as string);
        if (n === undefined) throw new TypeError(`field ${f.num}: no enum value ${String(v)}`);
        w.varint(n);
        return;
      }
      case 'message': {
        const o = v as Record<string, unknown>;
        if (Object.isFrozen(o)) {
          frozen(f.sub as Plan, o, mask);
          return;
        }
        const at = w.begin();
        message(f.sub as Plan, o, mask);
        w.end(at);
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
  /** The same under a mask (the mask's objects live as long as the request that compiled them). */
  const maskedBodies = new WeakMap<FieldMask, WeakMap<object, { readonly plan: Plan; readonly bytes: Buffer }>>();
  const frozen = (p: Plan, obj: Record<string, unknown>, mask: FieldMask | undefined): void => {
    let bodies = frozenBodies;
    if (mask !== undefined) {
      let m = maskedBodies.get(mask);
      if (m === undefined) maskedBodies.set(mask, (m = new WeakMap()));
      bodies = m;
    }
    const known = bodies.get(obj);
    const bytes = known?.plan === p ? known.bytes : undefined;
    if (bytes === undefined) {
      const from = w.pos;
      const at = w.begin();
      message(p, obj, mask);
      w.end(at);
      bodies.set(obj, { plan: p, bytes: w.copy(from) });
      return;
    }
    w.bytes(bytes);
  };
  const message = (p: Plan, obj: Record<string, unknown>, mask?: FieldMask): void => {
    for (const key in obj) {
      const v = obj[key];
      if (v === undefined || v === null) continue;
      const f = p.get(key);
      if (f === undefined) continue;
      let sub: FieldMask | undefined;
      if (mask !== undefined) {
        if (!mask.has(key)) continue;
        sub = mask.get(key);
      }
      if (f.repeated) {
        if (!Array.isArray(v)) throw new TypeError(`field ${f.num}: not a list`);
        if (f.kind === 'string' || f.kind === 'message' || f.kind === 'bytes') {
          for (const item of v as unknown[]) {
            w.varint(f.tag);
            scalar(f, item, sub);
          }
        } else if (v.length > 0) {
          // proto3 packs repeated numbers.
          w.varint(tag(f.num, LEN));
          const at = w.begin();
          for (const item of v as unknown[]) scalar(f, item);
          w.end(at);
        }
        continue;
      }
      w.varint(f.tag);
      scalar(f, v, sub);
    }
  };
  return (msg, mask) => {
    w.pos = 5;
    message(root, msg, mask);
    const out = w.copy();
    out[0] = 0;
    out.writeUInt32BE(out.length - 5, 1);
    return out;
  };
}
