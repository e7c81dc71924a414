/**
 * FlowFilter fields about what happened to the flow: verdict, traffic direction, IP version, drop
 * reason (enums, by name or number, with the values read from flow.proto), event type and reply.
 */
import { FilterError, json, num, optBool, optInt, rec, records, type Ctx, type FieldCompiler, type Pred, type Rec } from './filter-base.js';
/** The comparable key of an enum value: its number when known, else the name itself. */
const enumKey = (table: ReadonlyMap<string, number>, v: unknown): number | string =>
  typeof v === 'number' ? v : typeof v === 'string' ? (table.get(v) ?? v) : 0;

/** A filter's enum values as comparable keys; `open`: upper-case names the table lacks are kept as names. */
function enumValues(v: unknown, path: string, table: ReadonlyMap<string, number>, what: string, open: boolean): Set<number | string> {
  if (!Array.isArray(v)) throw new FilterError(path, `must be a list of ${what} values`);
  const out = new Set<number | string>();
  v.forEach((e, i) => {
    if (typeof e === 'number' && Number.isInteger(e) && e >= 0 && e <= 0x7fffffff) out.add(e);
    else if (typeof e === 'string' && table.has(e)) out.add(table.get(e)!);
    else if (typeof e === 'string' && open && /^[A-Z][A-Z0-9_]*$/.test(e)) out.add(e);
    else throw new FilterError(`${path}[${i}]`, `${json(e)} is not a ${what}`);
  });
  return out;
}

export function replyField(v: unknown, c: Ctx): Pred {
  if (!Array.isArray(v)) throw new FilterError(c.path, 'must be a list of booleans');
  let wantTrue = false, wantFalse = false;
  v.forEach((b, i) => {
    if (typeof b !== 'boolean') throw new FilterError(`${c.path}[${i}]`, `${json(b)} is not a boolean`);
    if (b) wantTrue = true;
    else wantFalse = true;
  });
  const dropped = enumKey(c.enums.verdict, 'DROPPED');
  return (f) => {
    // is_reply is a BoolValue: absent = unknown; `{}` = false (defaults are not filled in).
    const isReply = rec(f['is_reply']);
    // Hubble reads an unknown is_reply on a DROPPED flow as false (older clients' `reply` field).
    if (isReply === undefined && enumKey(c.enums.verdict, f['verdict']) !== dropped) return false;
    return isReply?.['value'] === true ? wantTrue : wantFalse;
  };
}

export function eventTypeField(v: unknown, c: Ctx): Pred {
  const types = records(v, c.path).map((r, i) => ({
    type: optInt(r, 'type', `${c.path}[${i}]`, -0x80000000, 0x7fffffff),
    matchSubType: optBool(r, 'match_sub_type', `${c.path}[${i}]`),
    subType: optInt(r, 'sub_type', `${c.path}[${i}]`, -0x80000000, 0x7fffffff),
  }));
  return (f) => {
    const ev = rec(f['event_type']);
    if (ev === undefined) return false;
    const type = num(ev['type']);
    const subType = num(ev['sub_type']);
    for (const t of types) {
      if (t.type !== 0 && t.type !== type) continue;
      if (t.matchSubType && t.subType !== subType) continue;
      return true;
    }
    return false;
  };
}

/** A field over one of flow.proto's closed enums: names must be the enum's, numbers any int32 ≥ 0. */
export function enumField(which: 'verdict' | 'trafficDirection' | 'ipVersion', what: string, get: (f: Rec) => unknown): FieldCompiler {
  return (v, c) => {
    const table = c.enums[which];
    const wanted = enumValues(v, c.path, table, what, false);
    return (f) => wanted.has(enumKey(table, get(f)));
  };
}

/**
 * drop_reason_desc: names of flow.proto's DropReason, numbers, and other upper-case names (a newer
 * Hubble's reasons, compared by name); only DROPPED flows have a drop reason to match (Hubble).
 */
export function dropReasonField(v: unknown, c: Ctx): Pred {
  const table = c.enums.dropReason;
  const wanted = enumValues(v, c.path, table, 'drop reason', true);
  const verdicts = c.enums.verdict;
  const dropped = enumKey(verdicts, 'DROPPED');
  return (f) => enumKey(verdicts, f['verdict']) === dropped && wanted.has(enumKey(table, f['drop_reason_desc']));
}
