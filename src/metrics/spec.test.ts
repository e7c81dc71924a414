/**
 * The one MetricsConfiguration validator (operator status and agent alike), against Retina:
 * its documented examples, its validator's test cases (crd/api/v1alpha1/validations/
 * validate_metricconfiguration_test.go) and its annotation-mode default set.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { advancedFamilies } from './catalog.js';
import { ANNOTATION_METRICS, annotationSpec, validateMetricsSpec } from './spec.js';

const fields = (issues: readonly { field: string }[]): string[] => issues.map((i) => i.field);

describe('MetricsConfiguration validator: Retina documented examples', () => {
  it('accepts the example of docs/05-Concepts/CRDs/MetricsConfiguration.md, warning that additionalLabels: [direction] has no effect', () => {
    // Verbatim from Retina's docs ("Creating a MetricsConfiguration").
    const doc = {
      contextOptions: [
        { metricName: 'drop_count', sourceLabels: ['ip', 'podname', 'port'], additionalLabels: ['direction'], ttl: '24h' },
        { metricName: 'forward_count', sourceLabels: ['ip', 'podname', 'port'], additionalLabels: ['direction'] },
      ],
      namespaces: { include: ['default', 'kube-system'] },
    };
    const r = validateMetricsSpec(doc);
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.spec, {
      contextOptions: [
        { metricName: 'drop_count', sourceLabels: ['ip', 'podname', 'port'], destinationLabels: [], additionalLabels: [], ttlMs: 86_400_000 },
        { metricName: 'forward_count', sourceLabels: ['ip', 'podname', 'port'], destinationLabels: [], additionalLabels: [], ttlMs: 0 },
      ],
      namespaces: { include: ['default', 'kube-system'] },
    });
    // Retina's forward.go/drop.go always label direction and add only is_reply from additionalLabels.
    assert.deepEqual(fields(r.warnings), ['spec.contextOptions[0].additionalLabels[0]', 'spec.contextOptions[1].additionalLabels[0]']);
    assert.match(r.warnings[0]?.problem ?? '', /direction is always a label of drop_count/);
  });

  it('rejects samples/metricsconfiguration.yaml as Retina does (requests_total is no advanced metric; include and exclude both set)', () => {
    const sample = { contextOptions: [{ metricName: 'requests_total', sourceLabels: ['source'], additionalLabels: ['direction'] }], namespaces: { include: ['default'], exclude: ['kube-system'] } };
    const r = validateMetricsSpec(sample);
    assert.equal(r.spec, undefined);
    assert.deepEqual(fields(r.errors), ['spec.contextOptions[0].metricName', 'spec.namespaces']);
  });

  // validate_metricconfiguration_test.go: wantErr for each.
  const retinaCases: [string, unknown, boolean][] = [
    ['empty spec', {}, true],
    ['valid metrics crd', { contextOptions: [{ metricName: 'drop_count' }], namespaces: { include: ['default'] } }, false],
    ['include and exclude', { contextOptions: [{ metricName: 'drop_count' }], namespaces: { include: ['default'], exclude: ['kube-system'] } }, true],
    ['valid with exclude', { contextOptions: [{ metricName: 'drop_count' }], namespaces: { exclude: ['kube-system'] } }, false],
    ['valid with TTL', { contextOptions: [{ metricName: 'drop_count', ttl: '24h' }], namespaces: { exclude: ['kube-system'] } }, false],
    ['valid with zero TTL', { contextOptions: [{ metricName: 'drop_count', ttl: '0' }], namespaces: { exclude: ['kube-system'] } }, false],
    ['TTL without unit', { contextOptions: [{ metricName: 'drop_count', ttl: '24' }], namespaces: { exclude: ['kube-system'] } }, true],
    ['negative TTL', { contextOptions: [{ metricName: 'drop_count', ttl: '-1h' }], namespaces: { exclude: ['kube-system'] } }, true],
    ['neither include nor exclude', { contextOptions: [{ metricName: 'drop_count' }], namespaces: {} }, true],
  ];
  for (const [name, spec, wantErr] of retinaCases) {
    it(`Retina's case "${name}": ${wantErr ? 'error' : 'valid'}`, () => assert.equal(validateMetricsSpec(spec).errors.length > 0, wantErr));
  }
});

describe('MetricsConfiguration validator: what Retina ignores is accepted with a warning naming the field', () => {
  it('unknown context labels (case-insensitive known ones kept), with the closest label suggested', () => {
    const r = validateMetricsSpec({ contextOptions: [{ metricName: 'forward_count', sourceLabels: ['PodName', 'pod', 'IP'], destinationLabels: ['workload', 'nonsense'] }], namespaces: { exclude: [] } });
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.spec?.contextOptions[0]?.sourceLabels, ['podname', 'ip']);
    assert.deepEqual(r.spec?.contextOptions[0]?.destinationLabels, ['workload']);
    assert.deepEqual(fields(r.warnings), ['spec.contextOptions[0].sourceLabels[1]', 'spec.contextOptions[0].destinationLabels[1]']);
    assert.match(r.warnings[0]?.problem ?? '', /"pod" is not a context label .*did you mean "podname"/);
  });

  it('is_reply only (exactly, as Retina matches it) and only on forward metrics', () => {
    const r = validateMetricsSpec({ contextOptions: [
      { metricName: 'forward_bytes', additionalLabels: ['is_reply'] },
      { metricName: 'drop_count', additionalLabels: ['is_reply', 'IS_REPLY'] },
    ], namespaces: { include: ['a'] } });
    assert.deepEqual(r.spec?.contextOptions.map((o) => o.additionalLabels), [['is_reply'], []]);
    assert.deepEqual(fields(r.warnings), ['spec.contextOptions[1].additionalLabels[0]', 'spec.contextOptions[1].additionalLabels[1]']);
    assert.match(r.warnings[1]?.problem ?? '', /did you mean "is_reply"/);
  });

  it('a name listed twice: the last entry is used (Retina keys its metric objects by name)', () => {
    const r = validateMetricsSpec({ contextOptions: [{ metricName: 'drop_count', sourceLabels: ['ip'] }, { metricName: 'drop_count', sourceLabels: ['podname'] }], namespaces: { include: ['a'] } });
    assert.deepEqual(r.spec?.contextOptions.map((o) => o.sourceLabels), [['podname']]);
    assert.deepEqual(fields(r.warnings), ['spec.contextOptions[0].metricName']);
  });

  it('names Retina accepts but makes nothing of', () => {
    const r = validateMetricsSpec({ contextOptions: [{ metricName: 'tcp_state' }, { metricName: 'node_connectivity_status' }], namespaces: { include: ['a'] } });
    assert.deepEqual(r.errors, []);
    assert.deepEqual(fields(r.warnings), ['spec.contextOptions[0].metricName', 'spec.contextOptions[1].metricName']);
  });

  it('errors name each field, and all of them at once', () => {
    const r = validateMetricsSpec({ contextOptions: [{ metricName: 'forward_cout' }, { metricName: 'drop_count', ttl: 'soon', sourceLabels: 'ip' }], namespaces: { include: ['a'], exclude: ['b'] } });
    assert.deepEqual(fields(r.errors), ['spec.contextOptions[0].metricName', 'spec.contextOptions[1].ttl', 'spec.contextOptions[1].sourceLabels', 'spec.namespaces']);
    assert.match(r.errors[0]?.problem ?? '', /did you mean "forward_count"/);
    assert.deepEqual(fields(validateMetricsSpec({ contextOptions: [], namespaces: { include: [] } }).errors), ['spec.contextOptions']);
    assert.deepEqual(fields(validateMetricsSpec(undefined).errors), ['spec']);
  });
});

describe('one catalog of advanced metrics', () => {
  it('annotation mode applies exactly Retina\'s default set (pkg/module/metrics/types.go DefaultMetrics), 11 families with the API-server three', () => {
    const retinaDefaultMetrics = [
      'forward_count', 'forward_bytes', 'drop_count', 'drop_bytes', 'tcp_flag_gauges', 'tcp_retransmission_count',
      'node_apiserver_latency', 'node_apiserver_handshake_latency', 'node_apiserver_no_response', 'dns_request_count', 'dns_response_count',
    ];
    assert.deepEqual([...ANNOTATION_METRICS], retinaDefaultMetrics);
    const spec = annotationSpec(['a']);
    assert.deepEqual(spec.contextOptions.map((o) => o.metricName), retinaDefaultMetrics);
    assert.deepEqual(validateMetricsSpec({ contextOptions: retinaDefaultMetrics.map((metricName) => ({ metricName })), namespaces: { include: ['a'] } }).warnings, []);
    const families = new Set(retinaDefaultMetrics.flatMap((n) => advancedFamilies[n as keyof typeof advancedFamilies].map((d) => d.name)));
    assert.equal(families.size, 11);
    for (const f of ['adv_node_apiserver_latency', 'adv_node_apiserver_tcp_handshake_latency', 'adv_node_apiserver_no_response']) assert.ok(families.has(`networkobservability_${f}`), f);
  });
});
