/**
 * Label selectors as Hubble's source_label / destination_label filters read them: the Kubernetes
 * label selector grammar (`a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x)`, `a>1`,
 * `a<1`, comma = AND, empty selector = everything) with Cilium's label sources:
 * - A selector key may carry a source, `k8s:app` (also `reserved:host`, `any:app`); a key without
 *   one means any source (Hubble's translateSelector rewrites `k8s:app` to the key `k8s.app` and a
 *   bare `app` to `any.app` before the Kubernetes parser sees it, so only one colon is allowed and
 *   the result must be a valid Kubernetes label key).
 * - A flow label is `source:key=value` (or `source:key`, or `$key` for `reserved:key`); a label
 *   without a source has the source `unspec`, which only an any-source key selects.
 *
 * Compiled once per request; matching walks the flow's label strings with index arithmetic and
 * never allocates.
 */

export class SelectorError extends Error {}

type Op = 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt';

interface Requirement {
  /** Label source to match, or '' for any source. */
  readonly source: string;
  readonly key: string;
  readonly op: Op;
  readonly values: readonly string[];
  /** The integer for gt/lt. */
  readonly bound: number;
}

export interface LabelSelector {
  /** True when every requirement holds for `labels` (strings in Cilium's `source:key=value` form). */
  matches(labels: readonly unknown[] | undefined): boolean;
}

// --- Hubble's translateSelector: `k8s:foo` -> `k8s.foo`, bare `foo` -> `any.foo` -----------------

const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f' || c === '\u0085' || c === '\u00a0';

function translate(selector: string): string {
  let out = '';
  let i = 0;
  const n = selector.length;
  while (i < n) {
    // advance to the next key
    while (i < n && (isSpace(selector[i]!) || selector[i] === '!')) out += selector[i++];
    // the key
    let key = '';
    while (i < n) {
      const c = selector[i]!;
      if (isSpace(c) || c === '=' || c === '!' || c === ',') break;
      key += c;
      i++;
    }
    if (!key.includes(':')) key = `any:${key}`;
    out += key.replace(':', '.');
    // advance to the next selector (a top-level comma)
    let nesting = 0;
    while (i < n) {
      const c = selector[i++]!;
      if (c === '(') nesting++;
      else if (c === ')') nesting--;
      out += c;
      if (c === ',' && nesting === 0) break;
    }
  }
  return out;
}

// --- The Kubernetes label selector lexer and parser (k8s.io/apimachinery/pkg/labels) -------------

type Tok = 'id' | 'in' | 'notin' | '!' | '!=' | '(' | ')' | ',' | '=' | '==' | '>' | '<' | 'eos';

const special = new Set(['=', '!', '(', ')', ',', '>', '<']);
const k8sSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n';

function lex(s: string): { tok: Tok; lit: string }[] {
  const out: { tok: Tok; lit: string }[] = [];
  let i = 0;
  for (;;) {
    while (i < s.length && k8sSpace(s[i]!)) i++;
    if (i >= s.length) {
      out.push({ tok: 'eos', lit: '' });
      return out;
    }
    const c = s[i]!;
    if (special.has(c)) {
      const two = s.slice(i, i + 2);
      if (two === '!=' || two === '==') {
        out.push({ tok: two, lit: two });
        i += 2;
      } else {
        out.push({ tok: c as Tok, lit: c });
        i++;
      }
      continue;
    }
    let j = i;
    while (j < s.length && !k8sSpace(s[j]!) && !special.has(s[j]!)) j++;
    const lit = s.slice(i, j);
    out.push({ tok: lit === 'in' ? 'in' : lit === 'notin' ? 'notin' : 'id', lit });
    i = j;
  }
}

const qualifiedName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function validateKey(key: string): void {
  const parts = key.split('/');
  let name = key;
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix.length === 0 || prefix.length > 253 || !dns1123Subdomain.test(prefix)) {
      throw new SelectorError(`invalid label key "${key}": prefix must be a DNS-1123 subdomain`);
    }
    name = parts[1]!;
  } else if (parts.length > 2) {
    throw new SelectorError(`invalid label key "${key}": at most one '/'`);
  }
  if (name.length === 0 || name.length > 63 || !qualifiedName.test(name)) {
    throw new SelectorError(`invalid label key "${key}": must be a qualified name (alphanumerics, '-', '_' or '.', at most 63)`);
  }
}

function validateValue(key: string, value: string): void {
  if (value.length > 63 || !labelValue.test(value)) {
    throw new SelectorError(`invalid label value "${value}" for key "${key}"`);
  }
}

/** Go's strconv.ParseInt(s, 10, 64) as a number (exact for the range label values can hold). */
function parseInt64(s: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = Number(s);
  return Math.abs(n) <= 9.223372036854776e18 ? n : undefined;
}

interface RawRequirement {
  readonly key: string;
  readonly op: Op;
  readonly values: string[];
}

function parseK8s(s: string): RawRequirement[] {
  const toks = lex(s);
  let p = 0;
  // In the Values context `in` and `notin` read as identifiers.
  const look = (): { tok: Tok; lit: string } => {
    const t = toks[p]!;
    return t.tok === 'in' || t.tok === 'notin' ? { tok: 'id', lit: t.lit } : t;
  };
  const consume = (values = true): { tok: Tok; lit: string } => {
    const t = values ? look() : toks[p]!;
    if (p < toks.length - 1) p++;
    return t;
  };
  const reqs: RawRequirement[] = [];
  for (;;) {
    const t = look();
    if (t.tok === 'eos') return reqs;
    if (t.tok !== 'id' && t.tok !== '!') throw new SelectorError(`found '${t.lit}', expected: !, identifier, or 'end of string'`);
    // requirement
    let op: Op | undefined;
    let k = consume();
    if (k.tok === '!') {
      op = '!';
      k = consume();
    }
    if (k.tok !== 'id') throw new SelectorError(`found '${k.lit}', expected: identifier`);
    validateKey(k.lit);
    const next = look().tok;
    if (next === 'eos' || next === ',') op ??= 'exists';
    let values: string[] = [];
    if (op === undefined) {
      const o = consume(false);
      switch (o.tok) {
        case 'in':
        case 'notin': {
          op = o.tok;
          const open = consume();
          if (open.tok !== '(') throw new SelectorError(`found '${open.lit}' expected: '('`);
          const first = look();
          if (first.tok === ')') {
            consume();
            values = [''];
          } else if (first.tok === 'id' || first.tok === ',') {
            const set = new Set<string>();
            for (;;) {
              const v = consume();
              if (v.tok === 'id') {
                set.add(v.lit);
                const after = look();
                if (after.tok === ',') continue;
                if (after.tok === ')') break;
                throw new SelectorError(`found '${after.lit}', expected: ',' or ')'`);
              } else if (v.tok === ',') {
                if (set.size === 0) set.add('');
                const after = look();
                if (after.tok === ')') {
                  set.add('');
                  break;
                }
                if (after.tok === ',') {
                  consume();
                  set.add('');
                }
              } else {
                throw new SelectorError(`found '${v.lit}', expected: ',', or identifier`);
              }
            }
            const close = consume();
            if (close.tok !== ')') throw new SelectorError(`found '${close.lit}', expected: ')'`);
            values = [...set];
          } else {
            throw new SelectorError(`found '${first.lit}', expected: ',', ')' or identifier`);
          }
          break;
        }
        case '=':
        case '==':
        case '!=':
        case '>':
        case '<': {
          op = o.tok === '!=' ? 'notin' : o.tok === '>' ? 'gt' : o.tok === '<' ? 'lt' : 'in';
          const v = look();
          if (v.tok === 'eos' || v.tok === ',') values = [''];
          else {
            const c = consume();
            if (c.tok !== 'id') throw new SelectorError(`found '${c.lit}', expected: identifier`);
            values = [c.lit];
          }
          break;
        }
        default:
          throw new SelectorError(`found '${o.lit}', expected: in, notin, =, ==, !=, gt, lt`);
      }
    }
    if ((op === 'gt' || op === 'lt') && parseInt64(values[0]!) === undefined) {
      throw new SelectorError(`for 'Gt', 'Lt' operators, the value must be an integer`);
    }
    for (const v of values) validateValue(k.lit, v);
    reqs.push({ key: k.lit, op, values });
    const sep = consume();
    if (sep.tok === 'eos') return reqs;
    if (sep.tok !== ',') throw new SelectorError(`found '${sep.lit}', expected: ',' or 'end of string'`);
    const after = look();
    if (after.tok !== 'id' && after.tok !== '!') throw new SelectorError(`found '${after.lit}', expected: identifier after ','`);
  }
}

// --- Matching over Cilium label strings -----------------------------------------------------------

/**
 * Where the key of a Cilium label string starts and the source length: `k8s:app=x` -> source 0..3,
 * key from 4. `$host` is reserved:host; `reserved.host` (no ':') too. Returns -1 for "no source".
 * Writes into `span` (module scratch).
 */
const span = { srcEnd: -1, keyStart: 0, keyEnd: 0, valStart: -1, reservedShort: false };
function splitLabel(l: string): void {
  span.reservedShort = false;
  if (l.length > 0 && l.charCodeAt(0) === 36 /* $ */) {
    span.srcEnd = -1;
    span.reservedShort = true;
    span.keyStart = 1;
  } else {
    const colon = l.indexOf(':');
    if (colon >= 0) {
      span.srcEnd = colon;
      span.keyStart = colon + 1;
    } else if (l.startsWith('reserved.')) {
      span.srcEnd = -1;
      span.reservedShort = true;
      span.keyStart = 9;
    } else {
      span.srcEnd = -1;
      span.keyStart = 0;
    }
  }
  const eq = l.indexOf('=', span.keyStart);
  // `reserved:=x` keeps the whole rest as key (Cilium's parseLabel quirk).
  if (eq === span.keyStart && (span.reservedShort || (span.srcEnd === 8 && l.startsWith('reserved')))) {
    span.keyStart = eq + 1;
    span.keyEnd = l.length;
    span.valStart = -1;
    return;
  }
  span.keyEnd = eq < 0 ? l.length : eq;
  span.valStart = eq < 0 ? -1 : eq + 1;
}

/** Index of the first label that has the requirement's key (and source), or -1; `span` describes it. */
function find(labels: readonly unknown[], r: Requirement): number {
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i];
    if (typeof l !== 'string') continue;
    splitLabel(l);
    if (span.keyEnd - span.keyStart !== r.key.length || !l.startsWith(r.key, span.keyStart)) continue;
    if (r.source !== '') {
      if (span.reservedShort) {
        if (r.source !== 'reserved') continue;
      } else if (span.srcEnd < 0) {
        if (r.source !== 'unspec') continue;
      } else if (span.srcEnd !== r.source.length || !l.startsWith(r.source)) {
        continue;
      }
    }
    return i;
  }
  return -1;
}

function valueIs(l: string, v: string): boolean {
  if (span.valStart < 0) return v === '';
  return l.length - span.valStart === v.length && l.startsWith(v, span.valStart);
}

function valueIn(l: string, values: readonly string[]): boolean {
  for (const v of values) if (valueIs(l, v)) return true;
  return false;
}

/** The label's value as an int64, or undefined (Go's ParseInt on the value). */
function valueInt(l: string): number | undefined {
  if (span.valStart < 0 || span.valStart === l.length) return undefined;
  let i = span.valStart;
  let sign = 1;
  const c0 = l.charCodeAt(i);
  if (c0 === 43 || c0 === 45) {
    sign = c0 === 45 ? -1 : 1;
    i++;
    if (i === l.length) return undefined;
  }
  let n = 0;
  for (; i < l.length; i++) {
    const c = l.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
    n = n * 10 + (c - 48);
  }
  return n <= 9.223372036854776e18 ? sign * n : undefined;
}

const EMPTY: readonly unknown[] = [];

function requirementMatches(r: Requirement, labels: readonly unknown[]): boolean {
  const at = find(labels, r);
  switch (r.op) {
    case 'exists':
      return at >= 0;
    case '!':
      return at < 0;
    case 'in':
      return at >= 0 && valueIn(labels[at] as string, r.values);
    case 'notin':
      return at < 0 || !valueIn(labels[at] as string, r.values);
    case 'gt':
    case 'lt': {
      if (at < 0) return false;
      const v = valueInt(labels[at] as string);
      if (v === undefined) return false;
      return r.op === 'gt' ? v > r.bound : v < r.bound;
    }
  }
}

/** Splits a translated key `src.key` at its first dot (Cilium's parseSelectLabel with '.'). */
function selectKey(k: string): { source: string; key: string } {
  if (k.startsWith('$')) return { source: 'reserved', key: k.slice(1) };
  const dot = k.indexOf('.');
  if (dot < 0) return { source: '', key: k };
  const source = k.slice(0, dot);
  return { source: source === 'any' ? '' : source, key: k.slice(dot + 1) };
}

/** Compiles one selector string; throws SelectorError naming the problem. */
export function compileSelector(selector: string): LabelSelector {
  const raw = parseK8s(translate(selector));
  const reqs: Requirement[] = raw.map((r) => {
    const { source, key } = selectKey(r.key);
    const bound = r.op === 'gt' || r.op === 'lt' ? parseInt64(r.values[0]!)! : 0;
    return { source, key, op: r.op, values: r.values, bound };
  });
  return {
    matches(labels) {
      const ls = Array.isArray(labels) ? labels : EMPTY;
      for (const r of reqs) if (!requirementMatches(r, ls)) return false;
      return true;
    },
  };
}
