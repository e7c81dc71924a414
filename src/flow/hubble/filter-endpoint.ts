/**
 * FlowFilter fields about the two endpoints: source/destination IP (exact or CIDR, Go's net
 * semantics), pod and service (`[namespace/][name-prefix]`), labels (Kubernetes selectors with
 * Cilium's label sources), workloads, identities and cluster names.
 */
import { cidrsContain, isIP, parseCidr, type Cidr } from './filter-ip.js';
import { FilterError, json, list, num, optString, rec, records, str, strings, type FieldCompiler, type Rec } from './filter-base.js';
import { compileSelector, SelectorError, type LabelSelector } from './filter-selector.js';

export const endpointOf = (side: 'source' | 'destination') => (f: Rec): Rec | undefined => rec(f[side]);

export function ipField(side: 'source' | 'destination'): FieldCompiler {
  return (v, c) => {
    const exact: string[] = [];
    const cidrs: Cidr[] = [];
    strings(v, c.path).forEach((s, i) => {
      if (s.includes('/')) {
        const cidr = parseCidr(s);
        if (cidr === undefined) throw new FilterError(`${c.path}[${i}]`, `${json(s)} is not an IP or CIDR`);
        cidrs.push(cidr);
      } else {
        if (!isIP(s)) throw new FilterError(`${c.path}[${i}]`, `${json(s)} is not an IP or CIDR`);
        exact.push(s);
      }
    });
    return (f) => {
      // Hubble compares exact addresses as text and CIDRs on the parsed address.
      const ip = str(rec(f['IP'])?.[side]);
      if (ip === '') return false;
      for (const e of exact) if (e === ip) return true;
      return cidrs.length > 0 && cidrsContain(cidrs, ip);
    };
  };
}

/** `[namespace/][name-prefix]`: Hubble's ParseNamespaceName (no namespace means "default"). */
export function namespacedField(get: (f: Rec) => Rec | undefined, nameKey: string): FieldCompiler {
  return (v, c) => {
    const filters = strings(v, c.path).map((s, i) => {
      const parts = s.split('/');
      const [ns, prefix] = parts.length > 1 ? [parts[0]!, parts[1]!] : s === '' ? ['', ''] : [DEFAULT_NAMESPACE, s];
      if (ns === '' && prefix === '') throw new FilterError(`${c.path}[${i}]`, `${json(s)} must be [namespace/][<name>]`);
      return { ns, prefix };
    });
    return (f) => {
      const r = get(f);
      const ns = str(r?.['namespace']);
      const name = str(r?.[nameKey]);
      if (ns === '' && name === '') return false;
      for (const nf of filters) if (nf.ns === ns && name.startsWith(nf.prefix)) return true;
      return false;
    };
  };
}
const DEFAULT_NAMESPACE = 'default';

export function labelField(side: 'source' | 'destination'): FieldCompiler {
  return (v, c) => {
    const selectors: LabelSelector[] = strings(v, c.path).map((s, i) => {
      try {
        return compileSelector(s);
      } catch (err) {
        if (err instanceof SelectorError) throw new FilterError(`${c.path}[${i}]`, `${json(s)} is not a label selector: ${err.message}`);
        throw err;
      }
    });
    return (f) => {
      const labels = list(rec(f[side])?.['labels']);
      for (const s of selectors) if (s.matches(labels)) return true;
      return false;
    };
  };
}

export function workloadField(side: 'source' | 'destination'): FieldCompiler {
  return (v, c) => {
    const wanted = records(v, c.path).map((w, i) => ({
      name: optString(w, 'name', `${c.path}[${i}]`),
      kind: optString(w, 'kind', `${c.path}[${i}]`),
    }));
    return (f) => {
      const ws = list(rec(f[side])?.['workloads']);
      if (ws === undefined) return false;
      for (const w of ws) {
        const wr = rec(w);
        const name = str(wr?.['name']);
        const kind = str(wr?.['kind']);
        for (const x of wanted) if ((x.name === '' || x.name === name) && (x.kind === '' || x.kind === kind)) return true;
      }
      return false;
    };
  };
}

export function identityField(side: 'source' | 'destination'): FieldCompiler {
  return (v, c) => {
    if (!Array.isArray(v)) throw new FilterError(c.path, 'must be a list of identities');
    const ids = new Set<number>();
    v.forEach((e, i) => {
      if (typeof e !== 'number' || !Number.isInteger(e) || e < 0 || e > 0xffffffff) throw new FilterError(`${c.path}[${i}]`, `${json(e)} is not a uint32 identity`);
      ids.add(e);
    });
    return (f) => {
      const ep = rec(f[side]);
      return ep !== undefined && ids.has(num(ep['identity']));
    };
  };
}

export function clusterField(side: 'source' | 'destination'): FieldCompiler {
  return (v, c) => {
    const names = strings(v, c.path);
    names.forEach((n, i) => {
      if (n === '') throw new FilterError(`${c.path}[${i}]`, 'name must not be empty');
    });
    return (f) => names.includes(str(rec(f[side])?.['cluster_name']));
  };
}
