/**
 * GetFlowsRequest.field_mask (Hubble 1.19; the hubble CLI 1.19 sends one by default for its text
 * outputs, `--field-mask`/`--use-default-field-masks`): only the masked flow.Flow fields are
 * encoded and sent. Filters still see the whole flow, as in Hubble (its observer applies the mask
 * after the filters).
 *
 * Paths are dot-separated proto field names (`source.pod_name`), compiled against flow.proto's
 * descriptors (src/flow/hubble/json.ts `mask`, the one the flow-log export's fieldMask uses), so a
 * path naming no field of Hubble's flow.Flow is refused (INVALID_ARGUMENT, naming it; Hubble answers
 * the same request with an error too). A path through a field of Hubble's flow.Flow that our
 * flow.proto leaves out (HUBBLE_ONLY: `ethernet` and `ip_trace_id` are in the CLI's default mask)
 * is accepted and selects nothing: this agent never sets those fields.
 *
 * On the raw-write path the frame encoder writes the masked fields straight from the whole flow
 * (encode.ts `mask`); on grpc-js's writes (and when the encoder falls back to protobufjs) the
 * projection below copies only the masked keys. A frozen sub-object (an endpoint's objects, shared by
 * its flows: src/flow/hubble/map.ts) is projected once per request and frozen, so the frame encoder
 * still writes its bytes once (encode.ts).
 */
import type { FieldMask, HubbleObject } from '../../flow/hubble/index.js';

/**
 * Fields of Hubble's flow.Flow (Cilium v1.19) that our flow.proto does not declare, as mask paths:
 * none is ever set by this agent.
 */
export const HUBBLE_ONLY_FIELDS: ReadonlySet<string> = new Set([
  'ethernet', 'ip_trace_id', 'auth_type', 'debug_capture_point', 'emitter', 'file', 'sock_xlate_point', 'trace_context',
  'trace_reason', 'tunnel', 'reply', 'extensions', 'egress_allowed_by', 'ingress_allowed_by', 'egress_denied_by',
  'ingress_denied_by', 'policy_log', 'aggregate', 'drop_reason', 'policy_match_type', 'proxy_port', 'cgroup_id',
  'socket_cookie', 'l4.IGMP', 'l4.VRRP', 'l7.kafka',
]);

/** A request's projection of a flow onto its mask. */
export type FlowProjection = (flow: HubbleObject) => HubbleObject;

/** GetFlowsRequest.field_mask as decoded (`{ paths: [...] }`), or undefined/null for none. */
export function maskPaths(fieldMask: unknown): string[] {
  if (fieldMask === undefined || fieldMask === null) return [];
  const paths = (fieldMask as { paths?: unknown }).paths;
  if (paths === undefined || paths === null) return [];
  if (!Array.isArray(paths) || !paths.every((p) => typeof p === 'string')) throw new TypeError('field_mask.paths must be a list of strings');
  return paths as string[];
}

/** Drops the paths through HUBBLE_ONLY_FIELDS (they select nothing here). */
export function carriedPaths(paths: readonly string[]): string[] {
  return paths.filter((p) => {
    const parts = p.split('.');
    return !HUBBLE_ONLY_FIELDS.has(parts[0] ?? '') && !HUBBLE_ONLY_FIELDS.has(parts.slice(0, 2).join('.'));
  });
}

const isObject = (v: unknown): v is HubbleObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The projection for a compiled mask (undefined: no mask, the whole flow). A mask whose every path
 * was Hubble-only still projects: onto an empty flow.
 */
export function createProjection(mask: FieldMask): FlowProjection {
  const memo = new WeakMap<FieldMask, WeakMap<object, HubbleObject>>();
  const project = (o: HubbleObject, m: FieldMask): HubbleObject => {
    const frozen = Object.isFrozen(o);
    let seen: WeakMap<object, HubbleObject> | undefined;
    if (frozen) {
      seen = memo.get(m);
      if (seen === undefined) memo.set(m, (seen = new WeakMap()));
      const hit = seen.get(o);
      if (hit !== undefined) return hit;
    }
    const out: HubbleObject = {};
    for (const [key, sub] of m) {
      const v = o[key];
      if (v === undefined || v === null) continue;
      if (sub === undefined) out[key] = v;
      else if (Array.isArray(v)) out[key] = v.map((x: unknown) => (isObject(x) ? project(x, sub) : x));
      else if (isObject(v)) out[key] = project(v, sub);
      else out[key] = v;
    }
    if (seen !== undefined) seen.set(o, Object.freeze(out));
    return out;
  };
  return (flow) => project(flow, mask);
}
