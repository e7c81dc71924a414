/**
 * Fuzzing the Kubernetes transforms (src/k8s/slim.ts: Pod, Service, Node, RetinaEndpoint) and the
 * MetricsConfiguration spec validator (src/metrics/spec.ts) on objects as a lenient or hostile API
 * server could send them: fields of the wrong type, addresses that are not addresses, nulls. A
 * transform returns undefined, an endpoint whose every IP is a normalised address, or throws an Error
 * naming the field (the reflector counts and skips that object); never a TypeError.
 */
import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { normalizeIp } from '../../src/cache/index.js';
import { endpointFromRetinaEndpoint, keyAllowlist, nodeTransform, podTransform, serviceTransform } from '../../src/k8s/slim.js';
import type { RetinaEndpoint } from '../../src/k8s/crd/retina-endpoint.js';
import { validateMetricsSpec } from '../../src/metrics/index.js';
import { fc, fuzzer, onlyThrows, timed } from './harness.js';

const fuzz = fuzzer(import.meta.url);

/** The WHATWG URL parser's text of an IPv6 address (the oracle for normalisation). */
const v6Canonical = (ip: string): string => new URL(`http://[${ip}]/`).hostname.slice(1, -1);

const ip = fc.oneof(fc.ipV4(), fc.ipV6());
/** What an address field may hold on the wire. */
const addressish: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: ip, weight: 6 },
  { arbitrary: ip.map((s) => s.toUpperCase()), weight: 1 },
  { arbitrary: fc.constantFrom('', 'None', '010.1.2.3', '1.2.3', '::ffff:1.2.3.4', 'fe80::1%eth0', '1.2.3.4/24', 'localhost', ' 10.0.0.1', ':::', '1::2::3'), weight: 2 },
  { arbitrary: fc.oneof(fc.integer(), fc.constant(null), fc.boolean(), fc.constant({}), fc.constant([])), weight: 1 },
);
const maybe = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(a, { nil: undefined, freq: 4 });
const labels = fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9./-]{0,15}$/), fc.string({ maxLength: 10 }), { maxKeys: 4 });
const metadata = fc.record({ name: fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/), namespace: maybe(fc.constantFrom('default', 'kube-system')), labels: maybe(labels), annotations: maybe(labels),
  ownerReferences: maybe(fc.array(fc.record({ kind: fc.constantFrom('ReplicaSet', 'Job', 'DaemonSet'), name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), controller: maybe(fc.boolean()) }), { maxLength: 2 })) });

const podArb = fc.record({
  metadata,
  spec: maybe(fc.record({ nodeName: maybe(fc.string({ maxLength: 5 })), hostNetwork: maybe(fc.boolean()) })),
  status: maybe(fc.record({ phase: maybe(fc.constantFrom('Running', 'Pending', 'Succeeded', 'Failed')), podIP: maybe(addressish), hostIP: maybe(addressish),
    podIPs: maybe(fc.array(fc.oneof(fc.record({ ip: addressish }), fc.constant(null)), { maxLength: 3 })) })),
});
const serviceArb = fc.record({
  metadata,
  spec: maybe(fc.record({ clusterIP: maybe(addressish), clusterIPs: maybe(fc.array(addressish, { maxLength: 3 })), selector: maybe(labels) })),
  status: maybe(fc.record({ loadBalancer: fc.record({ ingress: maybe(fc.array(fc.record({ ip: maybe(addressish), hostname: maybe(fc.constant('lb.example')) }), { maxLength: 2 })) }) })),
});
const nodeArb = fc.record({
  metadata,
  status: maybe(fc.record({ addresses: maybe(fc.array(fc.record({ type: fc.constantFrom('InternalIP', 'ExternalIP', 'Hostname'), address: addressish }), { maxLength: 4 })) })),
});
const retinaEndpointArb = fc.record({
  metadata,
  spec: fc.record({ podIP: addressish, podIPs: maybe(fc.array(addressish, { maxLength: 3 })), nodeIP: maybe(addressish), labels: maybe(labels), annotations: maybe(labels),
    ownerReferences: maybe(fc.array(fc.record({ kind: fc.constantFrom('ReplicaSet', 'Job'), name: fc.string({ maxLength: 12 }) }), { maxLength: 2 })) }),
});

/** Every IP of an endpoint is an address in the cache's normal form (IPv6 as the URL parser writes it). */
function assertIps(ips: readonly string[]): void {
  assert.equal(new Set(ips).size, ips.length, 'duplicate IPs');
  for (const a of ips) {
    assert.ok(isIP(a), `${JSON.stringify(a)} is not an IP address`);
    assert.equal(normalizeIp(a), a, `${a} is not normalised`);
    if (isIP(a) === 6 && !a.includes('.')) assert.equal(a, v6Canonical(a));
  }
}

/** The transform's outcome: an Error naming a field (spec., status., metadata.) or a value. */
function run<T>(what: string, fn: () => T): T | undefined {
  const r = timed(what, () => onlyThrows([Error], fn));
  if (r.ok) return r.value;
  assert.match(r.error.message, /^(spec|status|metadata)\.[A-Za-z.[\]0-9]+: /, `${what}: the error does not name the field: ${r.error.message}`);
  return undefined;
}

const allow = keyAllowlist(['app', 'app.kubernetes.io/*']);
fuzz('k8s-pod', podArb, (p) => {
  const e = run('podTransform', () => podTransform(allow, allow)(p as never));
  if (!e) return;
  assertIps(e.ips);
  if (e.nodeIP !== undefined) assertIps([e.nodeIP]);
  for (const k of Object.keys(e.labels)) assert.ok(allow(k), `label ${k} is not allowlisted`);
});
fuzz('k8s-service', serviceArb, (s) => {
  const e = run('serviceTransform', () => serviceTransform(s as never));
  if (e) assertIps(e.ips);
});
fuzz('k8s-node', nodeArb, (n) => {
  const e = run('nodeTransform', () => nodeTransform(n as never));
  if (e) assertIps(e.ips);
});
fuzz('k8s-retinaendpoint', retinaEndpointArb, (re) => {
  const e = run('endpointFromRetinaEndpoint', () => endpointFromRetinaEndpoint(re as unknown as RetinaEndpoint));
  if (!e) return;
  assertIps(e.ips);
  if (e.nodeIP !== undefined) assertIps([e.nodeIP]);
});

/** Valid addresses only: every one comes out, normalised, primary first. */
fuzz('k8s-pod-ips-roundtrip', fc.record({ primary: ip, more: fc.array(ip, { maxLength: 3 }) }), ({ primary, more }) => {
  const e = podTransform(allow, allow)({ metadata: { name: 'p' }, status: { phase: 'Running', podIP: primary, podIPs: [primary, ...more].map((x) => ({ ip: x })) } });
  const want = [...new Set([primary, ...more].map((x) => (isIP(x) === 6 && !x.includes('.') ? v6Canonical(x) : x)))];
  assert.deepEqual(e?.ips, want);
});

// ---- MetricsConfiguration spec -----------------------------------------------------------------

const names = fc.constantFrom('forward_count', 'drop_count', 'dns_request_count', 'tcp_flag_gauges', 'node_apiserver_latency', 'Forward_Count', 'nope', '__proto__', 'constructor', '');
const labelNames = fc.array(fc.oneof(fc.constantFrom('ip', 'namespace', 'podname', 'workload', 'service', 'port', 'IP', 'is_reply', 'direction', 'toString'), fc.integer(), fc.constant(null)), { maxLength: 4 });
const jsonish: fc.Arbitrary<unknown> = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null), fc.boolean(), fc.constant([]), fc.constant({}));
const specArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({
    contextOptions: fc.oneof(fc.array(fc.oneof(fc.record({ metricName: fc.oneof(names, jsonish), sourceLabels: fc.oneof(labelNames, jsonish), destinationLabels: maybe(labelNames),
      additionalLabels: maybe(labelNames), ttl: maybe(fc.oneof(fc.constantFrom('1h', '30s', '0', '-1s', '1e9h', '9'.repeat(400) + 'h', ''), jsonish)) }, { requiredKeys: [] }), jsonish), { maxLength: 4 }), jsonish),
    namespaces: fc.oneof(fc.record({ include: maybe(fc.oneof(fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }), jsonish)), exclude: maybe(fc.oneof(fc.array(fc.string({ maxLength: 6 })), jsonish)) }, { requiredKeys: [] }), jsonish),
  }, { requiredKeys: [] }),
  jsonish,
);

fuzz('metrics-spec', specArb, (raw) => {
  const check = timed('validateMetricsSpec', () => validateMetricsSpec(raw));
  for (const i of [...check.errors, ...check.warnings]) assert.match(i.field, /^spec(\.|$)/, `issue without a field: ${JSON.stringify(i)}`);
  assert.equal(check.spec === undefined, check.errors.length > 0);
  if (check.spec) {
    for (const o of check.spec.contextOptions) assert.ok(Number.isFinite(o.ttlMs) && o.ttlMs >= 0, `ttl ${o.ttlMs}`);
    assert.doesNotThrow(() => JSON.stringify(check.spec));
  }
});
