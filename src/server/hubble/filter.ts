/**
 * Hubble's FlowFilter semantics over Hubble `flow.Flow` objects (plain objects as @grpc/proto-loader
 * decodes them with keepCase, enums as names, longs as numbers, no defaults, oneofs).
 *
 * SIGNATURE ONLY (first commit); the implementation follows.
 */

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

/** A Hubble flow as a decoded/encodable plain object (snake_case keys). */
export type HubbleFlow = Readonly<Record<string, unknown>>;

export interface FlowMatcher {
  /** True when the flow passes: it matches any whitelist filter (or there is none) and no blacklist filter. */
  match(flow: HubbleFlow): boolean;
}

/**
 * Compiles GetFlowsRequest.whitelist / .blacklist (arrays of FlowFilter, or undefined/null for none)
 * once per request. Throws FilterError on a bad filter.
 */
export function compileFlowFilters(whitelist: unknown, blacklist: unknown): FlowMatcher {
  void whitelist;
  void blacklist;
  return { match: () => true };
}
