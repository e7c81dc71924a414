/**
 * Whether a request's FlowFilters ask only for flows a stored subset holds: the stored flow-log
 * history (src/server/hubble/history.ts) keeps the flows its exporter's allow/deny lists select, so
 * it answers a request exactly only when every flow the request matches was kept. Judged field by
 * field on the filters themselves, conservatively: "covered" is answered only when it is certain
 * (the same values, or a subset of them, of the same fields), never by running the filters, so a
 * request that would be covered under a cleverer reading (a pod prefix narrower than the kept one) is
 * answered "not covered" and refused, never answered with a silent subset.
 *
 * A filter N implies a filter B (every flow N matches, B matches) when every field B sets, N sets too
 * with values that are among B's (the values of a field OR, the fields AND).
 * - Allow: each of the request's allow filters implies one of the kept allow filters (a request with
 *   no allow filter asks for every flow: covered only when nothing narrows what is kept).
 * - Deny: each kept deny filter implies one of the request's deny filters (the request excludes at
 *   least what was never kept).
 */

export type FilterObject = Readonly<Record<string, unknown>>;

/** A value with its empty parts (undefined, null, [], {}) left out: proto3 cannot tell them from absent. */
function clean(v: unknown): unknown {
  if (v === undefined || v === null) return undefined;
  if (Array.isArray(v)) {
    const out = v.map(clean).filter((x) => x !== undefined);
    return out.length ? out : undefined;
  }
  if (typeof v === 'object' && !Buffer.isBuffer(v)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const c = clean((v as Record<string, unknown>)[k]);
      if (c !== undefined) out[k] = c;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return v;
}

/** Every flow `narrow` matches, `broad` matches (judged field by field: false when unsure). */
export function filterImplies(narrow: FilterObject, broad: FilterObject): boolean {
  for (const key of Object.keys(broad)) {
    const b = clean(broad[key]);
    if (b === undefined) continue;
    const n = clean(narrow[key]);
    if (n === undefined) return false;
    if (Array.isArray(b)) {
      if (!Array.isArray(n)) return false;
      const values = new Set(b.map((x) => JSON.stringify(x)));
      if (!n.every((x) => values.has(JSON.stringify(x)))) return false;
    } else if (JSON.stringify(n) !== JSON.stringify(b)) {
      return false;
    }
  }
  return true;
}

/** Why a request is not covered (naming the kept filter it misses), or undefined when it is. */
export function uncoveredBy(request: { allow: readonly FilterObject[]; deny: readonly FilterObject[] }, kept: { allow: readonly FilterObject[]; deny: readonly FilterObject[] }): string | undefined {
  const keptAllow = kept.allow.filter((f) => clean(f) !== undefined);
  const reqAllow = request.allow.filter((f) => clean(f) !== undefined);
  if (keptAllow.length > 0) {
    if (reqAllow.length === 0) return `it keeps only the flows its allow list matches (${JSON.stringify(keptAllow.map(clean))}) and the request asks for every flow`;
    for (const [i, r] of reqAllow.entries()) {
      if (!keptAllow.some((k) => filterImplies(r, k))) return `it keeps only the flows its allow list matches (${JSON.stringify(keptAllow.map(clean))}) and the request's allow filter ${i} (${JSON.stringify(clean(r))}) is not as narrow as one of them`;
    }
  }
  for (const d of kept.deny) {
    if (clean(d) === undefined) continue;
    if (!request.deny.some((r) => clean(r) !== undefined && filterImplies(d, r))) return `it never keeps the flows its deny list matches (${JSON.stringify(clean(d))}) and the request does not exclude them`;
  }
  return undefined;
}
