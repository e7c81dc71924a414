/**
 * The reader of the JSON json.ts writes: a protojson flow.Flow (a stored flow-log line's `flow`, as
 * `hubble observe -o json` prints it and Cilium's exporter writes it) back into the plain object the
 * rest of the Hubble modules use (the @grpc/proto-loader convention: snake_case keys, enums as names,
 * 64-bit integers as numbers, Timestamp as `{seconds, nanos}`, wrappers as `{value}`), so stored
 * flows meet the same filters (filter.ts), CEL, field masks and frame encoder as the ring's.
 *
 * Driven by the same plans as the writer (json.ts `jsonPlans`): RFC 3339 times (any offset, up to 9
 * fraction digits) to Timestamps, bare wrapper values to `{value}`, decimal-string 64-bit integers to
 * numbers, base64 to bytes, enum numbers to their names (a name stays a name); protojson's lowerCamel
 * JSON names are read as well as the proto names; keys flow.proto lacks stay (every reader of these
 * objects passes them over). What protojson
 * leaves out (proto3 zero values) stays absent, which every reader of these objects takes as zero.
 * Throws TypeError on a value of the wrong type (the caller skips the line).
 */
import type { PackageDefinition } from '@grpc/proto-loader';
import { jsonPlans, type Field, type Kind, type Plan } from './json.js';

export interface FlowJsonReader {
  /**
   * The flow.Flow object of a protojson flow: the parsed JSON object itself, read in place (so hand in
   * a fresh parse, not one shared with anything else).
   */
  flow(json: Record<string, unknown>): Record<string, unknown>;
}

/** The last second parsed (stored flows come in time order: most lines share it). */
let lastPrefix = '';
let lastSeconds = 0;

/**
 * An RFC 3339 time (protojson's Timestamp) as `{seconds, nanos}`, or undefined when it is not one.
 * Fast for protojson's own form (`2026-11-29T06:21:33.123456789Z`).
 */
export function parseRfc3339(s: string): { seconds: number; nanos: number } | undefined {
  if (s.length < 20 || (s.charCodeAt(10) !== 84 /* T */ && s.charCodeAt(10) !== 116)) return undefined;
  const prefix = s.slice(0, 19);
  let seconds: number;
  if (prefix === lastPrefix) {
    seconds = lastSeconds;
  } else {
    const m = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)$/.exec(prefix);
    if (m === null) return undefined;
    seconds = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) / 1000;
    if (!Number.isFinite(seconds)) return undefined;
    lastPrefix = prefix;
    lastSeconds = seconds;
  }
  let i = 19;
  let nanos = 0;
  if (s.charCodeAt(i) === 46 /* . */) {
    let digits = 0;
    for (i++; i < s.length; i++) {
      const c = s.charCodeAt(i) - 48;
      if (c < 0 || c > 9) break;
      if (++digits > 9) return undefined;
      nanos = nanos * 10 + c;
    }
    if (digits === 0) return undefined;
    nanos *= 10 ** (9 - digits);
  }
  const zone = s.slice(i);
  if (zone === 'Z' || zone === 'z') return { seconds, nanos };
  const z = /^([+-])(\d\d):(\d\d)$/.exec(zone);
  if (z === null) return undefined;
  const offset = (Number(z[2]) * 3600 + Number(z[3]) * 60) * (z[1] === '-' ? -1 : 1);
  return { seconds: seconds - offset, nanos };
}

/** protojson's JSON name of a proto field name (lowerCamel: `source_port` → `sourcePort`). */
function jsonName(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The reader of `type` (default flow.Flow) over a package definition that includes flow.proto. */
export function createFlowJsonReader(def: PackageDefinition, type = 'flow.Flow'): FlowJsonReader {
  const plan = jsonPlans(def);
  const root = plan(type);
  /** Per plan: its fields by JSON name as well as proto name (made on first use). */
  const names = new Map<Plan, Map<string, Field>>();
  const fieldOf = (p: Plan, key: string): Field | undefined => {
    const f = p.lookup[key];
    if (f !== undefined) return f;
    let m = names.get(p);
    if (m === undefined) {
      m = new Map(p.fields.map((x) => [jsonName(x.name), x]));
      names.set(p, m);
    }
    return m.get(key);
  };

  const scalar = (kind: Kind, v: unknown, f: Field): unknown => {
    switch (kind) {
      case 'string':
        if (typeof v !== 'string') throw new TypeError(`${f.name}: not a string`);
        return v;
      case 'bool':
        if (typeof v !== 'boolean') throw new TypeError(`${f.name}: not a bool`);
        return v;
      case 'int': case 'int64': case 'float': {
        const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
        if (Number.isNaN(n) && v !== 'NaN') throw new TypeError(`${f.name}: not a number`);
        return n;
      }
      case 'enum':
        if (typeof v === 'string') return v;
        if (typeof v === 'number') return f.names?.get(v) ?? v;
        throw new TypeError(`${f.name}: not an enum value`);
      case 'bytes':
        if (typeof v !== 'string') throw new TypeError(`${f.name}: not base64`);
        return Buffer.from(v, 'base64');
      default:
        throw new TypeError(`${f.name}: not a scalar`);
    }
  };
  const value = (f: Field, v: unknown): unknown => {
    switch (f.kind) {
      case 'message':
        if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new TypeError(`${f.name}: not an object`);
        return message(f.sub as Plan, v as Record<string, unknown>); // the same object, its fields read in place
      case 'timestamp': {
        const t = typeof v === 'string' ? parseRfc3339(v) : undefined;
        if (t === undefined) throw new TypeError(`${f.name}: not an RFC 3339 time`);
        return t;
      }
      case 'wrapper': return { value: scalar(f.inner as Kind, v, f) };
      default: return scalar(f.kind, v, f);
    }
  };
  // In place: the parsed JSON is the reader's to change (a fresh JSON.parse), and most of it (strings,
  // numbers, bools, enum names, lists of them) is already what the objects hold; only times, wrappers,
  // 64-bit strings, enum numbers, bytes and lowerCamel keys change. Keys flow.proto lacks stay and
  // every reader of these objects passes them over (as it does proto-loader's oneof names).
  const message = (p: Plan, obj: Record<string, unknown>): Record<string, unknown> => {
    const keys = Object.keys(obj);
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k] as string;
      const v = obj[key];
      let f = p.lookup[key];
      if (f === undefined) {
        f = fieldOf(p, key);
        if (f === undefined) continue;
        delete obj[key];
        if (obj[f.name] !== undefined) continue; // both spellings: the proto name wins
      }
      if (v === null || v === undefined) {
        obj[f.name] = undefined;
        continue;
      }
      if (f.repeated) {
        if (!Array.isArray(v)) throw new TypeError(`${f.name}: not a list`);
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i];
          const out = value(f, x);
          if (out !== x) v[i] = out;
        }
        if (f.name !== key) obj[f.name] = v;
      } else {
        const out = value(f, v);
        if (out !== v || f.name !== key) obj[f.name] = out;
      }
    }
    return obj;
  };
  return { flow: (json) => message(root, json as Record<string, unknown>) };
}
