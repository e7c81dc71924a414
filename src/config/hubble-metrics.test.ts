import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hubbleMetricsKeys, MAX_POD_LABEL_KEYS, parseHubbleMetrics, podLabelName } from './hubble-metrics.js';

describe('hubble.metrics.enabled: Cilium\'s syntax', () => {
  it('parses contexts, labelsContext (in Cilium\'s order) and flags, case-insensitively as Cilium', () => {
    const { metrics, refused } = parseHubbleMetrics([
      'dns:query;ignoreAAAA;sourceContext=workload-name|reserved-identity;destinationContext=pod|ip;labelsContext=traffic_direction,source_namespace',
      'drop:SourceContext=Pod;destinationEgressContext=namespace', 'flow', 'flows-to-world:any-drop;port;syn-only',
    ]);
    assert.deepEqual(refused, []);
    const [dns, drop, flow, world] = metrics;
    assert.deepEqual([dns?.name, dns?.source, dns?.destination, dns?.labels, [...(dns?.flags ?? [])]], [
      'dns', ['workload-name', 'reserved-identity'], ['pod', 'ip'], ['source_namespace', 'traffic_direction'], ['query', 'ignoreaaaa'],
    ]);
    assert.deepEqual([drop?.source, drop?.destination, drop?.destinationEgress], [['pod'], [], ['namespace']]);
    assert.deepEqual([flow?.name, flow?.source, flow?.labels], ['flow', [], []]);
    assert.deepEqual([...(world?.flags ?? [])], ['any-drop', 'port', 'syn-only']);
  });

  it('refuses each bad entry with the entry and why, and keeps the rest', () => {
    const { metrics, refused } = parseHubbleMetrics([
      'drop:sourceContext=pod', 'dns:sourceContext=pod|namespaces', 'tcp:labelsContext=source_pod,source_label', 'bogus', 'icmp', 'httpV2:exemplars=true',
      'flow:sourceContxt=pod', 'port-distribution:sourceContext=', 'tcp',
    ]);
    assert.deepEqual(metrics.map((m) => m.entry), ['drop:sourceContext=pod', 'tcp']);
    const why = Object.fromEntries(refused.map((r) => [r.entry, r.reason]));
    assert.match(why['dns:sourceContext=pod|namespaces'] ?? '', /unknown context 'namespaces'/);
    assert.match(why['tcp:labelsContext=source_pod,source_label'] ?? '', /invalid labelsContext value: source_label/);
    assert.match(why['bogus'] ?? '', /metric 'bogus' does not exist/);
    assert.match(why['icmp'] ?? '', /no ICMP type and code/);
    assert.match(why['httpV2:exemplars=true'] ?? '', /no HTTP records/);
    assert.match(why['flow:sourceContxt=pod'] ?? '', /unknown option 'sourceContxt' for flow/);
    assert.match(why['port-distribution:sourceContext='] ?? '', /sourceContext needs a value/);
    assert.equal(refused.length, 7);
  });

  it('a later entry of the same metric replaces an earlier one (Cilium keeps one handler per metric)', () => {
    const { metrics } = parseHubbleMetrics(['drop:sourceContext=pod', 'drop:sourceContext=namespace']);
    assert.deepEqual(metrics.map((m) => m.source), [['namespace']]);
  });

  it('takes a YAML list, or Cilium\'s space-separated string (env)', () => {
    const k = hubbleMetricsKeys().hubbleMetricsEnabled;
    assert.deepEqual(k.parse(['dns', 'drop:sourceContext=pod;destinationContext=pod']), ['dns', 'drop:sourceContext=pod;destinationContext=pod']);
    assert.deepEqual(k.parse('dns  drop:labelsContext=source_pod,source_namespace'), ['dns', 'drop:labelsContext=source_pod,source_namespace']);
  });
});

describe('metricsPodLabelsAllowlist', () => {
  const k = hubbleMetricsKeys().metricsPodLabelsAllowlist;
  it('takes label keys, names them label_<key> with Prometheus\' characters', () => {
    assert.deepEqual(k.parse(['app', 'team', 'app.kubernetes.io/name', 'app']), ['app', 'team', 'app.kubernetes.io/name']);
    assert.equal(podLabelName('app.kubernetes.io/name'), 'label_app_kubernetes_io_name');
    assert.equal(podLabelName('Team-X'), 'label_Team_X');
  });
  it(`refuses more than ${MAX_POD_LABEL_KEYS} keys, keys that are not label keys, and keys whose names clash`, () => {
    assert.throws(() => k.parse(Array.from({ length: MAX_POD_LABEL_KEYS + 1 }, (_, i) => `k${i}`)), new RegExp(`at most ${MAX_POD_LABEL_KEYS}.*\\(${MAX_POD_LABEL_KEYS + 1} given\\)`));
    assert.doesNotThrow(() => k.parse(Array.from({ length: MAX_POD_LABEL_KEYS }, (_, i) => `k${i}`)));
    assert.throws(() => k.parse(['has space']), /not a label key: has space/);
    assert.throws(() => k.parse(['a.b', 'a_b']), /a\.b and a_b both become label_a_b/);
  });
});
