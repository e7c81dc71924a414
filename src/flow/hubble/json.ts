/**
 * Hubble flows as the JSON the Hubble tools print and write: protobuf's canonical JSON mapping
 * (protojson) with the proto field names (Cilium's generated `MarshalJSON` uses `UseProtoNames`), so
 * a line reads as `hubble observe -o json` prints it and as Cilium's Hubble exporter writes it.
 * From a plain object in the @grpc/proto-loader convention (PROTO_OPTIONS: snake_case keys, enums as
 * names, 64-bit integers as numbers, oneofs named), driven by the descriptors proto-loader holds:
 *
 * - fields in declaration order; proto3 scalars at their zero value (0, '', false, the enum's 0
 *   value), empty lists and absent messages left out, as protojson does; a set message is always
 *   written (a message with nothing set is `{}`, as a set oneof member such as `ICMPv4`);
 * - google.protobuf.Timestamp as RFC 3339 in UTC with 0, 3, 6 or 9 fraction digits; the wrapper
 *   types (BoolValue, Int32Value, ...) as their bare value; 64-bit integers as decimal strings;
 *   bytes as base64; enums as names (a number the proto lacks stays a number);
 * - keys the message does not have (proto-loader's oneof names) are skipped.
 *
 * A field mask (Cilium's `hubble-export-fieldmask`: paths such as `source.namespace`) is compiled
 * against the same descriptors, so a path naming no field is an error naming it, and the writer then
 * writes only the masked fields.
 */
import type { PackageDefinition } from '@grpc/proto-loader';
import { enumValues, planner, resolveTypeName } from './descriptors.js';
import { flowEnums, type FlowEnums } from './enums.js';
import { FLOW_PROTO_FILES, hubbleProtoFiles, type HubbleProtoFiles } from './protos.js';

export type Kind = 'string' | 'bool' | 'int' | 'int64' | 'enum' | 'message' | 'float' | 'bytes' | 'timestamp' | 'wrapper';

export interface Field {
  readonly name: string;
  /** Declaration order in its message. */
  readonly index: number;
  readonly kind: Kind;
  readonly repeated: boolean;
  /** A proto3 `optional` scalar: written even at its zero value. */
  readonly oneof: boolean;
  /** enum: number → name, and the zero value's name. */
  readonly names: ReadonlyMap<number, string> | undefined;
  readonly zeroName: string | undefined;
  /** wrapper: the kind of its `value`. */
  readonly inner: Kind | undefined;
  /** message: its plan. */
  sub: Plan | undefined;
}

export interface Plan {
  readonly type: string;
  readonly fields: Field[];
  readonly byName: Map<string, Field>;
  /** The same, as a prototype-less object: the writer's lookup by key. */
  readonly lookup: Record<string, Field | undefined>;
}

const SCALAR: Readonly<Record<string, Kind>> = {
  TYPE_STRING: 'string', TYPE_BOOL: 'bool', TYPE_BYTES: 'bytes', TYPE_ENUM: 'enum', TYPE_MESSAGE: 'message',
  TYPE_UINT32: 'int', TYPE_INT32: 'int', TYPE_SINT32: 'int', TYPE_FIXED32: 'int', TYPE_SFIXED32: 'int',
  TYPE_UINT64: 'int64', TYPE_INT64: 'int64', TYPE_SINT64: 'int64', TYPE_FIXED64: 'int64', TYPE_SFIXED64: 'int64',
  TYPE_DOUBLE: 'float', TYPE_FLOAT: 'float',
};

const WRAPPERS: Readonly<Record<string, Kind>> = {
  'google.protobuf.BoolValue': 'bool', 'google.protobuf.StringValue': 'string', 'google.protobuf.BytesValue': 'bytes',
  'google.protobuf.Int32Value': 'int', 'google.protobuf.UInt32Value': 'int', 'google.protobuf.Int64Value': 'int64',
  'google.protobuf.UInt64Value': 'int64', 'google.protobuf.DoubleValue': 'float', 'google.protobuf.FloatValue': 'float',
};

/** The plans of flow.proto's messages as the JSON writer and reader (json-read.ts) see them. */
export function jsonPlans(def: PackageDefinition): (name: string) => Plan {
  const create = (name: string): Plan => ({ type: name, fields: [], byName: new Map(), lookup: Object.create(null) as Record<string, Field | undefined> });
  return planner(def, create, (p, name, descriptors, plan) => {
    for (const f of descriptors) {
      const kind = SCALAR[f.type];
      if (kind === undefined) continue;
      const repeated = f.label === 'LABEL_REPEATED';
      // A proto3 `optional` scalar has presence: written even at its zero value. The descriptors
      // proto-loader keeps give every field oneofIndex 0, so membership of a real oneof cannot be
      // read; flow.proto's oneof members are all messages, which are written whenever set anyway.
      const oneof = f.proto3Optional === true;
      // Every Field has the same properties (one hidden class: the writer's loads stay monomorphic).
      const field: Field = { name: f.name, index: p.fields.length, kind, repeated, oneof, names: undefined, zeroName: undefined, inner: undefined, sub: undefined };
      if (kind === 'enum') {
        const names = new Map(enumValues(def, resolveTypeName(def, name, f.typeName)).map((v) => [v.number, v.name]));
        Object.assign(field, { names, zeroName: names.get(0) ?? '' });
      } else if (kind === 'message') {
        const full = resolveTypeName(def, name, f.typeName);
        const inner = WRAPPERS[full];
        if (full === 'google.protobuf.Timestamp') Object.assign(field, { kind: 'timestamp' });
        else if (inner !== undefined) Object.assign(field, { kind: 'wrapper', inner });
        else field.sub = plan(full);
      }
      p.fields.push(field);
      p.byName.set(f.name, field);
      p.lookup[f.name] = field;
    }
  });
}

const pad = (n: number, w: number): string => String(n).padStart(w, '0');

/** The last second formatted (flows come in time order: most share it). */
let lastSecond = NaN;
let lastBase = '';

/** google.protobuf.Timestamp {seconds, nanos} as protojson writes it: RFC 3339, UTC, 0/3/6/9 fraction digits. */
export function rfc3339(ts: unknown): string {
  const t = (ts ?? {}) as { seconds?: unknown; nanos?: unknown };
  const s = Number(t.seconds ?? 0);
  const n = Number(t.nanos ?? 0);
  if (s !== lastSecond) {
    const d = new Date(s * 1000);
    lastBase = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
    lastSecond = s;
  }
  const base = lastBase;
  if (n === 0) return `${base}Z`;
  const frac = pad(n, 9);
  if (n % 1_000_000 === 0) return `${base}.${frac.slice(0, 3)}Z`;
  if (n % 1000 === 0) return `${base}.${frac.slice(0, 6)}Z`;
  return `${base}.${frac}Z`;
}

function isZero(kind: Kind, v: unknown, f: Field): boolean {
  switch (kind) {
    case 'string': return v === '';
    case 'bool': return v === false;
    case 'int': case 'int64': case 'float': return Number(v) === 0;
    case 'enum': return v === 0 || v === f.zeroName;
    case 'bytes': return (v as { length?: number }).length === 0;
    default: return false;
  }
}

function scalar(kind: Kind, v: unknown, f: Field): unknown {
  switch (kind) {
    case 'int64': return String(v);
    case 'int': return Number(v);
    case 'float': {
      const n = Number(v);
      return Number.isFinite(n) ? n : String(n);
    }
    case 'enum': return typeof v === 'number' ? (f.names?.get(v) ?? v) : v;
    case 'bytes': return Buffer.isBuffer(v) ? v.toString('base64') : typeof v === 'string' ? v : Buffer.from(v as Uint8Array).toString('base64');
    default: return v;
  }
}

/** A compiled field mask: the fields kept, each with the mask below it (undefined: the whole field). */
export type FieldMask = ReadonlyMap<string, FieldMask | undefined>;

export class FieldMaskError extends Error {
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`);
    this.name = 'FieldMaskError';
  }
}

export interface FlowJson {
  /** The protojson object of a Flow (PROTO_OPTIONS shape), restricted to `mask` when given. */
  flow(flow: Readonly<Record<string, unknown>>, mask?: FieldMask): Record<string, unknown>;
  /**
   * Compiles field-mask paths against flow.Flow (dot-separated proto field names, as Cilium's
   * hubble-export-fieldmask); throws FieldMaskError naming the path that names no field. An empty
   * list is no mask (undefined).
   */
  mask(paths: readonly string[]): FieldMask | undefined;
}

/** The protojson writer of `type` (default flow.Flow) over a package definition that includes flow.proto. */
export function createFlowJson(def: PackageDefinition, type = 'flow.Flow'): FlowJson {
  const plan = jsonPlans(def);
  const root = plan(type);

  const value = (f: Field, v: unknown, mask: FieldMask | undefined): unknown => {
    switch (f.kind) {
      case 'message': return message(f.sub as Plan, v as Record<string, unknown>, mask);
      case 'timestamp': return rfc3339(v);
      case 'wrapper': return scalar(f.inner as Kind, (v as { value?: unknown }).value ?? zeroOf(f.inner as Kind), f);
      default: return scalar(f.kind, v, f);
    }
  };
  /** Kinds whose repeated values are written as they are (no conversion per item). */
  const asIs = (k: Kind): boolean => k === 'string' || k === 'bool' || k === 'int' || k === 'enum';
  const message = (p: Plan, obj: Record<string, unknown>, mask: FieldMask | undefined): Record<string, unknown> => {
    // The object's own keys (few) rather than the message's fields (many): then in declaration
    // order, as protojson writes them (sorted only when the object's order differs).
    let fields: Field[] | undefined;
    let values: unknown[] | undefined;
    let sorted = true;
    let last = -1;
    const keys = Object.keys(obj);
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k] as string;
      const v = obj[key];
      if (v === undefined || v === null) continue;
      const f = p.lookup[key];
      if (f === undefined) continue;
      let sub: FieldMask | undefined;
      if (mask !== undefined) {
        if (!mask.has(key)) continue;
        sub = mask.get(key);
      }
      let out: unknown;
      if (f.repeated) {
        if (!Array.isArray(v) || v.length === 0) continue;
        out = asIs(f.kind) && (f.kind !== 'enum' || v.every((x) => typeof x === 'string')) ? v : v.map((item: unknown) => value(f, item, sub));
      } else {
        if (!f.oneof && f.kind !== 'message' && f.kind !== 'timestamp' && f.kind !== 'wrapper' && isZero(f.kind, v, f)) continue;
        out = value(f, v, sub);
      }
      (fields ??= []).push(f);
      (values ??= []).push(out);
      if (f.index < last) sorted = false;
      last = f.index;
    }
    const result: Record<string, unknown> = {};
    if (fields === undefined || values === undefined) return result;
    if (sorted) {
      for (let i = 0; i < fields.length; i++) result[(fields[i] as Field).name] = values[i];
      return result;
    }
    const order = fields.map((_, i) => i).sort((a, b) => (fields[a] as Field).index - (fields[b] as Field).index);
    for (const i of order) result[(fields[i] as Field).name] = values[i];
    return result;
  };
  return {
    flow: (flow, mask) => message(root, flow as Record<string, unknown>, mask),
    mask(paths) {
      if (paths.length === 0) return undefined;
      const top = new Map<string, FieldMask | undefined>();
      for (const path of paths) {
        const parts = path.split('.');
        let p: Plan | undefined = root;
        let node = top;
        for (let i = 0; i < parts.length; i++) {
          const name = parts[i] as string;
          const f: Field | undefined = p?.byName.get(name);
          if (p === undefined || f === undefined) {
            throw new FieldMaskError(path, p === undefined ? `${parts.slice(0, i).join('.')} has no fields to select` : `${name} is not a field of ${p.type}`);
          }
          const last = i === parts.length - 1;
          if (node.has(name) && node.get(name) === undefined) break; // the whole field is kept already
          if (last) {
            node.set(name, undefined);
            break;
          }
          let next = node.get(name) as Map<string, FieldMask | undefined> | undefined;
          if (next === undefined) {
            next = new Map();
            node.set(name, next);
          }
          node = next;
          p = f.sub;
        }
      }
      return top;
    },
  };
}

function zeroOf(kind: Kind): unknown {
  switch (kind) {
    case 'bool': return false;
    case 'string': return '';
    case 'bytes': return '';
    default: return 0;
  }
}

/**
 * flow.proto's enums and its JSON writer: from the Hubble protos parsed once and shared (protos.ts, what
 * the agent passes), or from a folder that holds flow.proto (proto/hubble; flow.proto alone is parsed).
 */
export function loadFlowProtos(from: string | HubbleProtoFiles): { readonly enums: FlowEnums; readonly json: FlowJson } {
  const def = (typeof from === 'string' ? hubbleProtoFiles(from, FLOW_PROTO_FILES) : from).definition();
  return { enums: flowEnums(def), json: createFlowJson(def) };
}
