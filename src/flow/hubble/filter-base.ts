/**
 * What every family of Hubble flow-filter fields shares (filter.ts has the semantics): the error
 * that names the field, reading a decoded flow without ever throwing, and checking a filter's
 * values once, at compile time.
 */
import { RE2JS } from 're2js';
import type { FlowEnums } from './enums.js';

/** A bad filter: the message names the field, e.g. `whitelist[0].source_ip[1]: "x" is not an IP or CIDR`. */
export class FilterError extends Error {
  override readonly name = 'FilterError';
  constructor(
    /** Path of the offending field, e.g. `whitelist[0].source_ip[1]`. */
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

export type Rec = Readonly<Record<string, unknown>>;
/** One compiled field: true when the flow matches it. */
export type Pred = (flow: Rec) => boolean;

/** Where a field is compiled: its path (for errors), the whole FlowFilter, and flow.proto's enums. */
export interface Ctx {
  readonly path: string;
  readonly filter: Rec;
  readonly enums: FlowEnums;
}

/** Compiles one FlowFilter field's value into a predicate (or throws FilterError). */
export type FieldCompiler = (v: unknown, c: Ctx) => Pred;

// --- reading the flow (never throws, whatever the object holds) -----------------------------------

export const rec = (v: unknown): Rec | undefined => (typeof v === 'object' && v !== null ? (v as Rec) : undefined);
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');
export const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
export const list = (v: unknown): readonly unknown[] | undefined => (Array.isArray(v) ? v : undefined);

// --- compile-time checks -----------------------------------------------------------------------

export function strings(v: unknown, path: string): string[] {
  if (!Array.isArray(v)) throw new FilterError(path, 'must be a list of strings');
  // An index loop, not forEach: a sparse array's holes are errors, not skipped.
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== 'string') throw new FilterError(`${path}[${i}]`, 'must be a string');
  return v as string[];
}

export function records(v: unknown, path: string): Rec[] {
  if (!Array.isArray(v)) throw new FilterError(path, 'must be a list of messages');
  for (let i = 0; i < v.length; i++) if (rec(v[i]) === undefined || Array.isArray(v[i])) throw new FilterError(`${path}[${i}]`, 'must be a message');
  return v as Rec[];
}

export function optString(r: Rec, key: string, path: string): string {
  const v = r[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new FilterError(`${path}.${key}`, 'must be a string');
  return v;
}

export function optBool(r: Rec, key: string, path: string): boolean {
  const v = r[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new FilterError(`${path}.${key}`, 'must be a boolean');
  return v;
}

export function optInt(r: Rec, key: string, path: string, min: number, max: number): number {
  const v = r[key];
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new FilterError(`${path}.${key}`, `must be an integer in ${min}..${max}`);
  }
  return v;
}

export const json = (v: unknown): string => {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

/** A client's regular expression, with RE2's (Go's) syntax and linear-time matching. */
export function re2(pattern: string, path: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    throw new FilterError(path, `${json(pattern)} is not a valid RE2 regular expression: ${err instanceof Error ? err.message : String(err)}`);
  }
}
