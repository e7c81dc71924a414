/**
 * FlowFilter fields matched on names and identifiers: source/destination FQDNs and the node name
 * (Hubble's FQDN patterns, `[cluster/]node`), the flow's UUID and its trace ID.
 */
import { FilterError, json, list, re2, rec, str, strings, type Ctx, type FieldCompiler, type Pred } from './filter-base.js';

/** Cilium's default cluster name, which Hubble assumes for node names without `cluster/`. */
const DEFAULT_CLUSTER = 'default';

/** Hubble's FQDN pattern: `*` any run of [-.0-9a-z], otherwise [-0-9_a-z.] literally; lowercased. */
function fqdnPatternRegexp(pattern: string, path: string): string {
  const p = pattern.trim().replace(/\.$/, '').toLowerCase();
  if (p === '') throw new FilterError(path, 'empty pattern');
  if (p.endsWith('.')) throw new FilterError(path, 'multiple trailing dots in pattern');
  let out = '';
  for (const ch of p) {
    if (ch === '.') out += '\\.';
    else if (ch === '*') out += '[-.0-9a-z]*';
    else if (ch === '-' || ch === '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z')) out += ch;
    else throw new FilterError(path, `${json(ch)}: invalid rune in pattern ${json(pattern)}`);
  }
  return out;
}
const FQDN_RE = '(?:[-0-9_a-z]+(?:\\.[-0-9_a-z]+)*)';

export function fqdnField(key: 'source_names' | 'destination_names'): FieldCompiler {
  return (v, c) => {
    const alts = strings(v, c.path).map((p, i) => fqdnPatternRegexp(p, `${c.path}[${i}]`));
    const re = re2(`\\A(?:${alts.join('|')})\\z`, c.path);
    return (f) => {
      const names = list(f[key]);
      if (names === undefined) return false;
      for (const n of names) if (typeof n === 'string' && re.matches(n)) return true;
      return false;
    };
  };
}

/** `[cluster/]node` patterns (each side an FQDN pattern, empty = any); a bare node name is in `default/`. */
export function nodeNameField(v: unknown, c: Ctx): Pred {
  const alts = strings(v, c.path).map((p, i) => {
    const path = `${c.path}[${i}]`;
    if (p === '') throw new FilterError(path, 'empty pattern');
    const parts = p.split('/');
    if (parts.length > 2) throw new FilterError(path, `${json(p)}: too many slashes in pattern`);
    const [cluster, node] = parts.length === 2 ? [parts[0]!, parts[1]!] : ['', parts[0]!];
    return `${cluster === '' ? FQDN_RE : fqdnPatternRegexp(cluster, path)}/${node === '' ? FQDN_RE : fqdnPatternRegexp(node, path)}`;
  });
  const re = re2(`\\A(?:${alts.join('|')})\\z`, c.path);
  // Flows of one agent carry one node name: remember the last answer instead of re-running the regex.
  let lastName = '';
  let lastResult = false;
  return (f) => {
    const name = str(f['node_name']);
    if (name === '') return false;
    if (name !== lastName) {
      lastName = name;
      lastResult = re.matches(name.includes('/') ? name : `${DEFAULT_CLUSTER}/${name}`);
    }
    return lastResult;
  };
}

export function uuidField(v: unknown, c: Ctx): Pred {
  const ids = strings(v, c.path);
  return (f) => ids.includes(str(f['uuid']));
}

export function traceIdField(v: unknown, c: Ctx): Pred {
  const ids = strings(v, c.path);
  return (f) => ids.includes(str(rec(rec(f['trace_context'])?.['parent'])?.['trace_id']));
}
