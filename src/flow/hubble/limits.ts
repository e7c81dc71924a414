/**
 * Bounds on what one client's filters may ask, checked before anything is compiled: every value of
 * a filter is tested against every flow the client reads, IPs and CIDRs by a scan, and regular
 * expressions cost compile time and memory in proportion to their size and matching time per flow
 * in proportion to their alternatives (re2js: a 16 KiB pattern took ~340 ms to compile and ~0.5 ms
 * per match on this project's 2-core machine). Hubble itself sets no such bounds; a request past one
 * is refused whole with a FilterLimitError naming the limit and where it was crossed (the Observer
 * answers INVALID_ARGUMENT).
 *
 * Counted over the whitelist and the blacklist together:
 * - maxFilters: FlowFilter messages;
 * - maxValues: the values of every field of every filter (each element of a repeated field);
 * - maxRegexes, maxRegexBytes: values of the fields compiled to regular expressions (source/
 *   destination_fqdn and node_name patterns, dns_query, http_path, http_url) and their total length
 *   in bytes (UTF-8);
 * - maxAddresses: values of source_ip / destination_ip (exact IPs and CIDRs).
 */
import { FilterError, rec } from './filter-base.js';

export interface FilterLimits {
  readonly maxFilters: number;
  readonly maxValues: number;
  readonly maxRegexes: number;
  readonly maxRegexBytes: number;
  readonly maxAddresses: number;
}

export const DEFAULT_FILTER_LIMITS: FilterLimits = Object.freeze({
  maxFilters: 64,
  maxValues: 1024,
  maxRegexes: 32,
  maxRegexBytes: 2048,
  maxAddresses: 256,
});

/** A request past one of the limits: `limit` is its name in FilterLimits. */
export class FilterLimitError extends FilterError {
  constructor(field: string, readonly limit: keyof FilterLimits, problem: string) {
    super(field, problem);
  }
}

const REGEX_FIELDS = new Set(['source_fqdn', 'destination_fqdn', 'node_name', 'dns_query', 'http_path', 'http_url']);
const ADDRESS_FIELDS = new Set(['source_ip', 'destination_ip']);

/** Throws FilterLimitError at the first limit the request's whitelist and blacklist cross. */
export function checkFilterLimits(whitelist: unknown, blacklist: unknown, limits: FilterLimits = DEFAULT_FILTER_LIMITS): void {
  const lists: [string, readonly unknown[]][] = [];
  for (const [name, l] of [['whitelist', whitelist], ['blacklist', blacklist]] as const) if (Array.isArray(l)) lists.push([name, l]);
  const filters = lists.reduce((n, [, l]) => n + l.length, 0);
  if (filters > limits.maxFilters) {
    throw new FilterLimitError('whitelist, blacklist', 'maxFilters', `${filters} FlowFilters in the request, more than the limit of ${limits.maxFilters} (maxFilters)`);
  }
  let values = 0;
  let regexes = 0;
  let regexBytes = 0;
  let addresses = 0;
  for (const [name, l] of lists) {
    for (const [i, filter] of l.entries()) {
      const r = rec(filter);
      if (r === undefined) continue; // the compiler names it
      for (const key of Object.keys(r)) {
        const v = r[key];
        if (v === undefined || v === null) continue;
        const path = `${name}[${i}].${key}`;
        const n = Array.isArray(v) ? v.length : 1;
        values += n;
        if (values > limits.maxValues) throw new FilterLimitError(path, 'maxValues', `${values} or more filter values in the request, more than the limit of ${limits.maxValues} (maxValues)`);
        if (REGEX_FIELDS.has(key) && Array.isArray(v)) {
          regexes += n;
          if (regexes > limits.maxRegexes) throw new FilterLimitError(path, 'maxRegexes', `${regexes} or more regular expressions in the request, more than the limit of ${limits.maxRegexes} (maxRegexes)`);
          for (const p of v) regexBytes += typeof p === 'string' ? Buffer.byteLength(p) : 0;
          if (regexBytes > limits.maxRegexBytes) throw new FilterLimitError(path, 'maxRegexBytes', `${regexBytes} or more bytes of regular expressions in the request, more than the limit of ${limits.maxRegexBytes} (maxRegexBytes)`);
        }
        if (ADDRESS_FIELDS.has(key)) {
          addresses += n;
          if (addresses > limits.maxAddresses) throw new FilterLimitError(path, 'maxAddresses', `${addresses} or more IPs and CIDRs in the request, more than the limit of ${limits.maxAddresses} (maxAddresses)`);
        }
      }
    }
  }
}
