/**
 * Declarative configuration keys: each key knows its default, how to parse a raw value (from YAML or
 * from a `RETINA_<KEY>` string) and how to describe what it allows. Specs are plain data; components
 * declare the keys they read and receive frozen, typed values.
 */
import { InvalidValue } from './errors.js';
import { parseDurationMs, formatDurationMs } from './duration.js';

export interface KeySpec<T> {
  /** Retina's key, dotted for nested YAML (`apiServer.port`). */
  readonly key: string;
  readonly default: T;
  /** What is allowed, for error messages and the README. */
  readonly allowed: string;
  readonly doc: string;
  /** Parses a raw value (YAML scalar/list or env string); throws InvalidValue. */
  parse(raw: unknown): T;
  /** The default as a user would write it, for docs. */
  readonly defaultText: string;
  /** What a chart value may be, as JSON Schema (the chart's values.schema.json is generated from it). */
  readonly schema?: JsonSchema;
}

/** A JSON Schema fragment (draft-07), as plain data. */
export type JsonSchema = { readonly [k: string]: unknown };

/** A Go duration as YAML writes it (the chart's schema). */
export const DURATION_PATTERN = '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$';

/** A component's configuration: field name → key spec. */
export type ConfigSpec<C> = { readonly [K in keyof C]: KeySpec<C[K]> };

export function envName(key: string): string {
  return 'RETINA_' + key.replace(/\./g, '_').toUpperCase();
}

function asString(raw: unknown): string | undefined {
  if (typeof raw === 'string') return raw.trim();
  if (typeof raw === 'number' || typeof raw === 'boolean') return String(raw);
  return undefined;
}

export function stringKey(key: string, def: string, doc: string, opts: { nonEmpty?: boolean } = {}): KeySpec<string> {
  const allowed = opts.nonEmpty ? 'a non-empty string' : 'a string';
  return {
    key, default: def, doc, allowed, defaultText: def, schema: opts.nonEmpty ? { type: 'string', minLength: 1 } : { type: 'string' },
    parse(raw) {
      const s = asString(raw);
      if (s === undefined || (opts.nonEmpty && s === '')) throw new InvalidValue();
      return s;
    },
  };
}

export function intKey(key: string, def: number, doc: string, opts: { min?: number; max?: number; powerOfTwo?: boolean } = {}): KeySpec<number> {
  const min = opts.min ?? Number.MIN_SAFE_INTEGER;
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  let allowed = 'an integer';
  if (opts.min !== undefined && opts.max !== undefined) allowed += ` from ${min} to ${max}`;
  else if (opts.min !== undefined) allowed += ` >= ${min}`;
  else if (opts.max !== undefined) allowed += ` <= ${max}`;
  if (opts.powerOfTwo) allowed += ', a power of two';
  return {
    key, default: def, doc, allowed, defaultText: String(def),
    schema: { type: 'integer', ...(opts.min !== undefined ? { minimum: min } : {}), ...(opts.max !== undefined ? { maximum: max } : {}) },
    parse(raw) {
      const s = asString(raw);
      if (s === undefined || !/^[+-]?\d+$/.test(s)) throw new InvalidValue();
      const n = Number(s);
      if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidValue();
      if (opts.powerOfTwo && (n <= 0 || (n & (n - 1)) !== 0)) throw new InvalidValue();
      return n;
    },
  };
}

export function boolKey(key: string, def: boolean, doc: string): KeySpec<boolean> {
  return {
    key, default: def, doc, allowed: 'true or false', defaultText: String(def), schema: { type: 'boolean' },
    parse(raw) {
      if (typeof raw === 'boolean') return raw;
      const s = asString(raw)?.toLowerCase();
      if (s === 'true') return true;
      if (s === 'false') return false;
      throw new InvalidValue();
    },
  };
}

export function enumKey<T extends string>(key: string, def: T, values: readonly T[], doc: string): KeySpec<T> {
  return {
    key, default: def, doc, allowed: `one of ${values.join(', ')}`, defaultText: def, schema: { enum: [...values] },
    parse(raw) {
      const s = asString(raw);
      const hit = values.find((v) => v.toLowerCase() === s?.toLowerCase());
      if (hit === undefined) throw new InvalidValue();
      return hit;
    },
  };
}

/**
 * A CPU quantity as Kubernetes writes it (`500m`, `0.5`, `2`), parsed to whole millicores: 0, or from
 * `minMillicores` to `maxMillicores`. 0 (`0`, `0m`, `off`) turns what it limits off.
 */
export function cpuKey(key: string, defMillicores: number, doc: string, opts: { minMillicores: number; maxMillicores: number }): KeySpec<number> {
  const { minMillicores: min, maxMillicores: max } = opts;
  return {
    key, default: defMillicores, doc,
    allowed: `a CPU quantity such as 500m, 0.5 or 2 (cores), from ${min}m to ${max / 1000}, or 0 (off)`,
    defaultText: `${defMillicores}m`,
    schema: { oneOf: [{ type: 'number', minimum: 0 }, { type: 'string', pattern: '^(off|[0-9]+m|[0-9]+(\\.[0-9]+)?)$' }] },
    parse(raw) {
      const s = asString(raw)?.toLowerCase();
      if (s === undefined) throw new InvalidValue();
      if (s === 'off') return 0;
      let m: number;
      if (/^\d+m$/.test(s)) m = Number(s.slice(0, -1));
      else if (/^\d+(\.\d+)?$/.test(s)) m = Number(s) * 1000;
      else throw new InvalidValue();
      if (Math.abs(m - Math.round(m)) > 1e-6 || !Number.isSafeInteger(Math.round(m))) throw new InvalidValue(); // finer than 1m
      m = Math.round(m);
      if (m !== 0 && (m < min || m > max)) throw new InvalidValue();
      return m;
    },
  };
}

/**
 * The longest duration a key accepts: 24 days, under the 2^31 - 1 ms that setTimeout and setInterval
 * take (a longer delay fires after 1 ms, so a long interval would turn into a busy loop).
 */
export const MAX_DURATION_MS = 576 * 3_600_000;

/** A Go-style duration (`10s`, `1m30s`, `500ms`) parsed to milliseconds, at most MAX_DURATION_MS. */
export function durationKey(key: string, defMs: number, doc: string, opts: { minMs?: number } = {}): KeySpec<number> {
  const minMs = opts.minMs ?? 0;
  return {
    key, default: defMs, doc,
    allowed: `a duration such as 10s, 1m30s or 500ms${minMs > 0 ? `, at least ${formatDurationMs(minMs)}` : ''}, at most ${formatDurationMs(MAX_DURATION_MS)}`,
    defaultText: formatDurationMs(defMs),
    schema: { type: 'string', pattern: DURATION_PATTERN },
    parse(raw) {
      const s = asString(raw);
      const ms = s === undefined ? undefined : parseDurationMs(s);
      if (ms === undefined || ms < minMs || ms > MAX_DURATION_MS) throw new InvalidValue();
      return ms;
    },
  };
}

/**
 * A list of strings: a YAML list, or a string `a,b` / `[a, b]` (as env values are written).
 * With `values`, every item must be one of them (case-sensitive, duplicates removed).
 */
export function listKey(key: string, def: readonly string[], doc: string, opts: { values?: readonly string[]; allowedText?: string; nonEmpty?: boolean } = {}): KeySpec<readonly string[]> {
  const allowed = opts.allowedText ?? (opts.values ? `a list of: ${opts.values.join(', ')}` : 'a list of strings');
  return {
    key, default: def, doc, allowed, defaultText: def.length ? def.join(', ') : '[]',
    schema: { type: 'array', items: opts.values ? { enum: [...opts.values] } : { type: 'string' } },
    parse(raw) {
      let items: unknown[];
      if (Array.isArray(raw)) items = raw;
      else {
        const s = asString(raw);
        if (s === undefined) throw new InvalidValue();
        const inner = s.startsWith('[') && s.endsWith(']') ? s.slice(1, -1) : s;
        items = inner.split(',').map((x) => x.trim().replace(/^["']|["']$/g, '')).filter((x) => x !== '');
      }
      const out: string[] = [];
      for (const it of items) {
        const s = asString(it);
        if (s === undefined || s === '') throw new InvalidValue();
        if (opts.values && !opts.values.includes(s)) throw new InvalidValue(`${allowed} (unknown: ${s})`);
        if (!out.includes(s)) out.push(s);
      }
      if (opts.nonEmpty && out.length === 0) throw new InvalidValue(`${allowed}, at least one`);
      return out;
    },
  };
}
