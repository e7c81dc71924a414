/** ContainerNetworkLog validation: ACNS's documented template is valid; each bad field is named by its path. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isIpOrCidr, validateContainerNetworkLogSpec as validate } from './container-network-log.js';

/** The spec of ACNS's "ContainerNetworkLog CRD template" (Set up container network logs), verbatim. */
const ACNS_TEMPLATE = {
  includefilters: [{
    name: 'sample-filter',
    from: {
      namespacedPod: ['sample-namespace/sample-pod'],
      labelSelector: {
        matchLabels: { app: 'frontend', 'k8s.io/namespace': 'sample-namespace' },
        matchExpressions: [{ key: 'environment', operator: 'In', values: ['production', 'staging'] }],
      },
      ip: ['192.168.1.10', '10.0.0.1'],
    },
    to: {
      namespacedPod: ['sample-namespace2/sample-pod2'],
      labelSelector: {
        matchLabels: { app: 'backend', 'k8s.io/namespace': 'sample-namespace2' },
        matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['dev'] }],
      },
      ip: ['192.168.1.20', '10.0.1.1'],
    },
    protocol: ['tcp', 'udp', 'dns'],
    verdict: ['forwarded', 'dropped'],
  }],
};

describe('validateContainerNetworkLogSpec', () => {
  it("accepts ACNS's documented template, the status example's prefix form, and an empty filter (everything)", () => {
    assert.deepEqual(validate(ACNS_TEMPLATE), []);
    assert.deepEqual(validate({ includefilters: [{ name: 'f', from: { namespacedPod: ['namespace/pod-'] }, to: { namespacedPod: ['namespace/pod-'] }, protocol: ['tcp'], verdict: ['dropped'] }] }), []);
    assert.deepEqual(validate({ includefilters: [{}] }), []);
    assert.deepEqual(validate({ includefilters: [{ from: { namespacedPod: ['shop/'], ip: ['fd00::/64', '::1'], labelSelector: {} } }] }), []);
  });

  it('names the field path of every problem', () => {
    assert.deepEqual(validate(undefined), ['spec: is required (includefilters)']);
    assert.deepEqual(validate({}), ['spec.includefilters: must list at least one filter']);
    assert.deepEqual(validate({ includefilters: [] }), ['spec.includefilters: must list at least one filter']);
    assert.deepEqual(validate({ includefilters: [{}, { from: { ip: ['10.0.0.300'] } }] }), ['spec.includefilters[1].from.ip[0]: "10.0.0.300" is not an IP or CIDR']);
    assert.deepEqual(validate({ includefilters: [{ to: { ip: ['10.0.0.0/33', 'fe80::1%eth0', '10.1.0.0/16'] } }] }), [
      'spec.includefilters[0].to.ip[0]: "10.0.0.0/33" is not an IP or CIDR',
      'spec.includefilters[0].to.ip[1]: "fe80::1%eth0" is not an IP or CIDR',
    ]);
    assert.deepEqual(validate({ includefilters: [{ protocol: ['tcp', 'icmp'], verdict: ['DROPPED'] }] }), [
      'spec.includefilters[0].protocol[1]: "icmp" is not one of tcp, udp, dns',
      'spec.includefilters[0].verdict[0]: "DROPPED" is not one of forwarded, dropped',
    ]);
    assert.deepEqual(validate({ includefilters: [{ from: { namespacedPod: ['nopod', 'Bad_NS/x', 'ns/Pod'] } }] }), [
      'spec.includefilters[0].from.namespacedPod[0]: "nopod" is not namespace/pod',
      'spec.includefilters[0].from.namespacedPod[1]: "Bad_NS/x": namespace "Bad_NS" is not a namespace name (a DNS-1123 label)',
      'spec.includefilters[0].from.namespacedPod[2]: "ns/Pod": "Pod" is not a pod name or name prefix (lower-case alphanumerics, \'-\', \'.\')',
    ]);
    const sel = validate({ includefilters: [{ to: { labelSelector: {
      matchLabels: { 'bad key!': 'x', app: 'no spaces' },
      matchExpressions: [{ key: 'a', operator: 'In' }, { key: 'b', operator: 'Exists', values: ['x'] }, { key: 'c', operator: 'Equals', values: ['x'] }],
    } } }] });
    assert.equal(sel.length, 5);
    assert.match(sel[0]!, /^spec\.includefilters\[0\]\.to\.labelSelector\.matchLabels: "bad key!" is not a label key/);
    assert.match(sel[1]!, /^spec\.includefilters\[0\]\.to\.labelSelector\.matchLabels\["app"\]: "no spaces" must be/);
    assert.equal(sel[2], 'spec.includefilters[0].to.labelSelector.matchExpressions[0].values: must not be empty with operator In');
    assert.equal(sel[3], 'spec.includefilters[0].to.labelSelector.matchExpressions[1].values: must be empty with operator Exists');
    assert.equal(sel[4], 'spec.includefilters[0].to.labelSelector.matchExpressions[2].operator: "Equals" is not one of In, NotIn, Exists, DoesNotExist');
    assert.deepEqual(validate({ includefilters: [{ form: {}, from: { pod: ['x'] } }] }), [
      'spec.includefilters[0].form: unknown field (want name, from, to, protocol or verdict)',
      'spec.includefilters[0].from.pod: unknown field (want namespacedPod, labelSelector or ip)',
    ]);
    assert.deepEqual(validate({ includefilters: [{ to: { labelSelector: { matchLabels: { 'k8s.io/namespace': 'Not_A_Namespace' } } } }] }), [
      'spec.includefilters[0].to.labelSelector.matchLabels["k8s.io/namespace"]: "Not_A_Namespace" is not a namespace name (a DNS-1123 label)',
    ]);
  });

  it('IPs and CIDRs as Hubble takes them', () => {
    for (const ok of ['10.0.0.1', '10.0.0.0/8', '0.0.0.0/0', '::', 'fd00::1/128', '::ffff:10.0.0.1']) assert.equal(isIpOrCidr(ok), true, ok);
    for (const bad of ['', '10.0.0', '10.0.0.1/', '10.0.0.1/-1', 'fd00::/129', 'host', '10.0.0.1 ']) assert.equal(isIpOrCidr(bad), false, bad);
  });
});
