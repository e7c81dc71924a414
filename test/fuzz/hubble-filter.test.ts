/**
 * Fuzzing the Hubble flow filter (src/flow/hubble/filter.ts): whatever a gRPC client sends as
 * whitelist/blacklist, compiling either succeeds or throws FilterError (which the server answers with
 * INVALID_ARGUMENT), and a compiled matcher never throws on any flow object and answers within the
 * budget. Filters mix well-formed FlowFilter fields (so compile often succeeds and matching runs deep)
 * with arbitrary values (about a fifth of the generated requests compile, and about half of their
 * flows pass); flows mix the Hubble flow shape with arbitrary values.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { compileFlowFilters as compileWith, FilterError, type FlowMatcher } from '../../src/flow/hubble/index.js';
import { loadFlowEnums } from '../../src/flow/hubble/index.js';
import { fc, fuzzer, onlyThrows, timed } from './harness.js';

const fuzz = fuzzer(import.meta.url);
const ENUMS = loadFlowEnums(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
const compileFlowFilters = (w: unknown, b: unknown): FlowMatcher => compileWith(w, b, ENUMS);

const anything = fc.anything({ maxDepth: 2, maxKeys: 4, withSparseArray: true, withNullPrototype: true });
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom('', '/', 'default/', 'default/web', 'kube-system/coredns-', 'web', '10.0.0.0/8', 'fd00::/16', '1.2.3.4', '::ffff:1.2.3.4', '::1/129'),
  fc.constantFrom('k8s:app=web', 'app in (a, b), !x', 'k8s:a>1', 'a notin ()', '(', 'any:k8s:x', 'a,', '=', 'k8s:app.kubernetes.io/name=w'),
  fc.constantFrom('.*', '(a+)+$', '(', '\\1', '^kube', '*.cilium.io', 'default/', 'a/b/c', '53', '65536', 'tcp', 'dns', 'icmp', 'QUIC', '4+', '600'),
);
const strs = fc.array(text, { maxLength: 3 });
const value = (v: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> => fc.oneof({ weight: 6, arbitrary: v }, { weight: 1, arbitrary: anything });

/** Each field's values (a filter picks up to three fields, so compiling often succeeds). */
const fieldArbs: Record<string, fc.Arbitrary<unknown>> = {
  uuid: value(strs),
  source_ip: value(strs),
  destination_ip: value(strs),
  source_pod: value(strs),
  destination_pod: value(strs),
  source_label: value(strs),
  destination_label: value(strs),
  source_service: value(strs),
  destination_workload: value(fc.array(fc.record({ name: text, kind: text }, { requiredKeys: [] }), { maxLength: 2 })),
  verdict: value(fc.array(fc.constantFrom('FORWARDED', 'DROPPED', 'AUDIT', 'VERDICT_UNKNOWN', 2, 'NOPE'), { maxLength: 2 })),
  drop_reason_desc: value(fc.array(fc.constantFrom('POLICY_DENIED', 'FIB_LOOKUP_FAILED', 133, 'x'), { maxLength: 2 })),
  traffic_direction: value(fc.array(fc.constantFrom('INGRESS', 'EGRESS', 0), { maxLength: 2 })),
  event_type: value(fc.array(fc.record({ type: fc.integer({ min: -1, max: 130 }), match_sub_type: fc.boolean(), sub_type: fc.integer() }, { requiredKeys: [] }), { maxLength: 2 })),
  protocol: value(strs),
  source_port: value(strs),
  destination_port: value(strs),
  reply: value(fc.array(fc.boolean(), { maxLength: 2 })),
  dns_query: value(strs),
  tcp_flags: value(fc.array(fc.record({ SYN: fc.boolean(), ACK: fc.boolean(), FIN: fc.boolean() }, { requiredKeys: [] }), { maxLength: 2 })),
  node_name: value(strs),
  ip_version: value(fc.array(fc.constantFrom('IPv4', 'IPv6', 'IP_NOT_USED'), { maxLength: 2 })),
  source_fqdn: value(strs),
  http_status_code: value(strs),
  http_path: value(strs),
  source_identity: value(fc.array(fc.integer({ min: -1, max: 1000 }), { maxLength: 2 })),
  experimental: value(fc.record({ cel_expression: fc.array(fc.string(), { maxLength: 1 }) }, { requiredKeys: [] })),
  not_a_field: anything,
};
const flowFilter = fc
  .array(fc.oneof(...Object.entries(fieldArbs).map(([k, a]) => a.map((v) => [k, v] as const))), { maxLength: 3 })
  .map((entries) => Object.fromEntries(entries));
const filters = fc.oneof({ weight: 8, arbitrary: fc.array(flowFilter, { maxLength: 3 }) }, { weight: 1, arbitrary: anything }, { weight: 1, arbitrary: fc.array(anything, { maxLength: 2 }) });

const ip = fc.oneof(fc.ipV4(), fc.ipV6(), text);
const endpoint = fc.record(
  {
  namespace: value(text),
  pod_name: value(text),
  labels: value(fc.array(fc.oneof(text, fc.constantFrom('k8s:app=web', '$host', 'reserved.world', 'k8s:a=2', 'reserved:=x')), { maxLength: 4 })),
  workloads: value(fc.array(fc.record({ name: text, kind: text }, { requiredKeys: [] }), { maxLength: 2 })),
  identity: value(fc.nat()),
  },
  { requiredKeys: [] },
);
const ports = fc.record({ source_port: value(fc.nat(70000)), destination_port: value(fc.nat(70000)), flags: value(fc.record({ SYN: fc.boolean(), ACK: fc.anything() }, { requiredKeys: [] })) }, { requiredKeys: [] });
const flow = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      {
        uuid: value(text),
        verdict: value(fc.constantFrom('FORWARDED', 'DROPPED', 'AUDIT', 2, 99)),
        drop_reason_desc: value(fc.constantFrom('POLICY_DENIED', 133, 'UNLISTED')),
        IP: value(fc.record({ source: value(ip), destination: value(ip), ipVersion: value(fc.constantFrom('IPv4', 'IPv6')) }, { requiredKeys: [] })),
        l4: value(fc.record({ TCP: value(ports), UDP: value(ports), ICMPv4: value(fc.constant({})) }, { requiredKeys: [] })),
        l7: value(fc.record({ dns: value(fc.record({ query: value(text) }, { requiredKeys: [] })), http: value(fc.record({ code: value(fc.nat(700)), url: value(text) }, { requiredKeys: [] })) }, { requiredKeys: [] })),
        source: value(endpoint),
        destination: value(endpoint),
        source_names: value(fc.array(text, { maxLength: 2 })),
        node_name: value(text),
        is_reply: value(fc.record({ value: fc.boolean() }, { requiredKeys: [] })),
        event_type: value(fc.record({ type: fc.integer(), sub_type: fc.integer() }, { requiredKeys: [] })),
        traffic_direction: value(fc.constantFrom('INGRESS', 'EGRESS')),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: anything },
);

fuzz('hubble-filter', fc.record({ whitelist: filters, blacklist: filters, flows: fc.array(flow, { maxLength: 4 }) }), ({ whitelist, blacklist, flows }) => {
  const compiled = onlyThrows([FilterError], (): FlowMatcher => timed('compileFlowFilters', () => compileFlowFilters(whitelist, blacklist)));
  if (!compiled.ok) {
    assert.match(compiled.error.message, /^(whitelist|blacklist)/, 'a FilterError names the list and field');
    return;
  }
  for (const f of flows) {
    const matcher: FlowMatcher = compiled.value;
    const r: boolean = timed('match', () => matcher.match(f as never));
    assert.equal(typeof r, 'boolean');
    // Deterministic: the same flow gives the same answer (node-name memo, regex state).
    assert.equal(matcher.match(f as never), r);
  }
  // A flow passes only when the whitelist would pass it on its own and the blacklist would not drop it.
  const w = compileFlowFilters(whitelist, undefined);
  const b = compileFlowFilters(undefined, blacklist);
  for (const f of flows) assert.equal(compiled.value.match(f as never), w.match(f as never) && b.match(f as never));
});

