/**
 * Fuzzing the Hubble server's CEL filter (src/server/hubble/cel.ts, `hubble observe --cel-expression`):
 * whatever expression a client sends, compiling either succeeds or throws FilterError (the server's
 * INVALID_ARGUMENT, naming the expression), and a compiled filter never throws on a flow, answers a
 * boolean, the same one twice, within the budget. Expressions come from a small CEL grammar over
 * `_flow`'s fields (selections, comparisons, logic, macros nested up to three deep, `matches` with
 * hostile patterns, string functions, literals of every type) mixed with arbitrary text; flows are the
 * shapes the mapping makes (src/flow/hubble/map.ts) and, to be sure, arbitrary objects.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { createFlow, type Endpoint } from '../../src/flow/index.js';
import { FilterError, toHubbleFlow } from '../../src/flow/hubble/index.js';
import { loadHubbleProtos } from '../../src/server/hubble/index.js';
import { fc, fuzzer, onlyThrows, timed } from './harness.js';

const fuzz = fuzzer(import.meta.url);
const protos = loadHubbleProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));

const fields = fc.constantFrom('_flow.verdict', '_flow.node_name', '_flow.Summary', '_flow.source.pod_name', '_flow.source.namespace', '_flow.source.labels',
  '_flow.destination.labels', '_flow.l4.TCP.destination_port', '_flow.l4.UDP.source_port', '_flow.IP.source', '_flow.IP.ipVersion', '_flow.is_reply',
  '_flow.time', '_flow.l7.dns.query', '_flow.l7.dns.ips', '_flow.event_type.type', '_flow.traffic_direction', '_flow.no_such', '_flow.ethernet', '_flow', 'x');
const literals = fc.oneof(
  fc.constantFrom('1', '0u', '-1', '1.5', 'true', 'false', 'null', '""', '"web"', 'b"x"', '[]', '[1, 2]', '{"a": 1}', 'Verdict.DROPPED', 'flow.Verdict.FORWARDED',
    'timestamp("2023-11-14T22:13:20Z")', 'duration("1s")', '9223372036854775807', '18446744073709551615u'),
  fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
);
const patterns = fc.constantFrom('"(a+)+$"', '"^web"', '"("', '"\\\\1"', '"(?i)DROP"', '".*.*.*.*.*=.*"', '"[[:alpha:]]+"');
const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fields,
    literals,
    fc.tuple(tie('e'), fc.constantFrom('==', '!=', '<', '>=', '&&', '||', '+', '-', '*', '/', '%', 'in'), tie('e')).map(([a, op, b]) => `${a} ${op} ${b}`),
    fc.tuple(fc.constantFrom('!', '-', ''), tie('e')).map(([op, a]) => `${op}(${a})`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([c, a, b]) => `${c} ? ${a} : ${b}`),
    fc.tuple(fields, fc.constantFrom('exists', 'all', 'exists_one', 'map', 'filter'), tie('e')).map(([l, m, body]) => `${l}.${m}(v, ${body.replaceAll('_flow.source.labels', 'v')})`),
    fc.tuple(fields, fc.constantFrom('startsWith', 'endsWith', 'contains', 'matches'), fc.oneof(literals, patterns)).map(([f, m, a]) => `${f}.${m}(${a})`),
    fc.tuple(fc.constantFrom('size', 'has', 'int', 'uint', 'string', 'double', 'type', 'dyn'), tie('e')).map(([f, a]) => `${f}(${a})`),
  ),
})).e;
/** Boolean expressions of the right types (most compile, so evaluation runs deep). */
const str = fc.oneof(fc.constantFrom('"web-0"', '"shop"', '""', '"drop reason: NETFILTER_DROP"', '"node-a"', '"k8s:app=web"'), fc.string({ maxLength: 5 }).map((x) => JSON.stringify(x)));
const strField = fc.constantFrom('_flow.node_name', '_flow.Summary', '_flow.source.pod_name', '_flow.destination.namespace', '_flow.IP.source', '_flow.l7.dns.query');
const listField = fc.constantFrom('_flow.source.labels', '_flow.destination.labels', '_flow.l7.dns.ips', '_flow.node_labels', '_flow.source_names');
const boolExpr: fc.Arbitrary<string> = fc.letrec<{ b: string; v: string }>((tie) => ({
  b: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(strField, fc.constantFrom('==', '!=', '<', '>'), str).map(([f, op, v]) => `${f} ${op} ${v}`),
    fc.tuple(fc.constantFrom('_flow.l4.TCP.destination_port', '_flow.l4.UDP.source_port', '_flow.event_type.type'), fc.constantFrom('==', '>=', '<'), fc.constantFrom('53u', '80u', '0u', '1', '4')).map(([f, op, v]) => `${f} ${op} ${v}`),
    fc.constantFrom('_flow.verdict == Verdict.DROPPED', '_flow.verdict != flow.Verdict.FORWARDED', 'has(_flow.l4.TCP)', 'has(_flow.source.pod_name)', '_flow.is_reply == true',
      '_flow.time > timestamp("1970-01-01T00:00:01Z")', '_flow.IP.ipVersion == IPVersion.IPv6', 'true', 'false', '_flow.traffic_direction == TrafficDirection.EGRESS'),
    fc.tuple(strField, fc.constantFrom('startsWith', 'endsWith', 'contains', 'matches'), fc.oneof(str, patterns)).map(([f, m, a]) => `${f}.${m}(${a})`),
    fc.tuple(listField, fc.constantFrom('exists', 'all', 'exists_one'), tie('v')).map(([l, m, body]) => `${l}.${m}(v, ${body})`),
    fc.tuple(listField, fc.constantFrom('>', '==', '<'), fc.constantFrom('0', '1', '2')).map(([l, op, n]) => `size(${l}) ${op} ${n}`),
    fc.tuple(tie('b'), fc.constantFrom('&&', '||'), tie('b')).map(([a, op, b]) => `(${a}) ${op} (${b})`),
    tie('b').map((a) => `!(${a})`),
    fc.tuple(tie('b'), tie('b'), tie('b')).map(([c, a, b]) => `(${c}) ? (${a}) : (${b})`),
  ),
  // A predicate over the comprehension's variable `v` (a string), which may nest another comprehension.
  v: fc.oneof(
    { depthSize: 'small' },
    str.map((x) => `v == ${x}`),
    fc.tuple(fc.constantFrom('startsWith', 'contains', 'matches'), fc.oneof(str, patterns)).map(([m, a]) => `v.${m}(${a})`),
    fc.tuple(listField, tie('v')).map(([l, body]) => `${l}.exists(w, ${body.replaceAll('v', 'w')} || w == v)`),
  ),
})).b;
const anyText = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ maxLength: 3000, unit: fc.constantFrom('(', ')', '[', '_flow', '.', 'a', ' ', '"', '||', '1') }));

const pod = (name: string, app: string): Endpoint => Object.freeze({
  namespace: 'shop', podName: name, workloadKind: 'Deployment', workloadName: app, service: app, nodeName: 'n', zone: '', labels: Object.freeze({ app, tier: 'x'.repeat(40) }),
});
const FLOWS = [
  createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 1, dstPort: 80, tcpFlags: 18, isReply: true, source: pod('web-0', 'web'), destination: pod('db-0', 'db'), timeMs: 1 }),
  createFlow({ srcIp: 'fd00::1', dstIp: 'fd00::2', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: 2, dstPort: 9999, timeMs: 2 }),
  createFlow({ srcIp: '10.0.0.53', dstIp: '10.0.0.1', verdict: 'DNS', proto: 17, srcPort: 53, dstPort: 3, destination: pod('web-1', 'web'), timeMs: 3,
    dns: { query: 'a.example.com', qtype: 'AAAA', rcode: 'NXDOMAIN', answers: [], isResponse: true, numAnswers: 0 } }),
].map((f) => toHubbleFlow(f, 'node-a'));
const odd = fc.anything({ maxDepth: 2, maxKeys: 4 }).filter((v) => typeof v === 'object' && v !== null && !Array.isArray(v)) as fc.Arbitrary<Record<string, unknown>>;

fuzz('hubble-cel', fc.record({ exprs: fc.array(fc.oneof({ weight: 6, arbitrary: boolExpr }, { weight: 3, arbitrary: expr }, { weight: 1, arbitrary: anyText }), { minLength: 1, maxLength: 2 }), odd: fc.array(odd, { maxLength: 2 }) }), ({ exprs, odd: others }) => {
  const compiled = onlyThrows([FilterError], () => timed('cel compile', () => protos.cel(exprs, 'whitelist[0].experimental.cel_expression')));
  if (!compiled.ok) {
    assert.match(compiled.error.message, /^whitelist\[0\]\.experimental\.cel_expression/, 'a refusal names the expression');
    return;
  }
  for (const f of [...FLOWS, ...others]) {
    const r: boolean = timed('cel match', (): boolean => compiled.value(f));
    assert.equal(typeof r, 'boolean');
    assert.equal(compiled.value(f), r, 'the same answer twice');
  }
});
