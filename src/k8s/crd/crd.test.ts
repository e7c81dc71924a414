/** The CR types follow the schema the chart ships (charts/retina/crds). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { CAPTURE_FIELDS } from './capture.js';
import { CONTAINER_NETWORK_LOG_FIELDS } from './container-network-log.js';
import { METRICS_CONFIGURATION_FIELDS } from './metrics-configuration.js';
import { RETINA_ENDPOINT_SPEC_FIELDS } from './retina-endpoint.js';
import { RETINA_ENDPOINT_SLICE_ENTRY_FIELDS } from './retina-endpoint-slice.js';

type Schema = { properties?: Record<string, Schema>; items?: Schema };
const schema = (file: string): Schema => {
  const crd = parse(readFileSync(new URL(`../../../../charts/retina/crds/${file}`, import.meta.url), 'utf8')) as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } };
  return crd.spec.versions[0]?.schema.openAPIV3Schema as Schema;
};
const props = (s: Schema | undefined): string[] => Object.keys(s?.properties ?? {}).sort();
const sorted = (xs: readonly string[]): string[] => [...xs].sort();

describe('CR types match the chart CRDs', () => {
  it('RetinaEndpoint', () => {
    assert.deepEqual(props(schema('retina.sh_retinaendpoints.yaml').properties?.['spec']), sorted(RETINA_ENDPOINT_SPEC_FIELDS));
  });
  it('RetinaEndpointSlice', () => {
    const s = schema('retina.sh_retinaendpointslices.yaml');
    assert.deepEqual(props(s), ['apiVersion', 'endpoints', 'kind', 'metadata']);
    assert.deepEqual(props(s.properties?.['endpoints']?.items), sorted(RETINA_ENDPOINT_SLICE_ENTRY_FIELDS));
  });
  it('MetricsConfiguration', () => {
    const s = schema('retina.sh_metricsconfigurations.yaml');
    assert.deepEqual(props(s.properties?.['spec']), sorted(METRICS_CONFIGURATION_FIELDS.spec));
    assert.deepEqual(props(s.properties?.['spec']?.properties?.['contextOptions']?.items), sorted(METRICS_CONFIGURATION_FIELDS.contextOption));
    assert.deepEqual(props(s.properties?.['status']), sorted(METRICS_CONFIGURATION_FIELDS.status));
  });
  it('Capture', () => {
    const s = schema('retina.sh_captures.yaml');
    assert.deepEqual(props(s.properties?.['spec']), sorted(CAPTURE_FIELDS.spec));
    assert.deepEqual(props(s.properties?.['status']), sorted(CAPTURE_FIELDS.status));
  });
  it('ContainerNetworkLog', () => {
    const s = schema('acn.azure.com_containernetworklogs.yaml');
    const filter = s.properties?.['spec']?.properties?.['includefilters']?.items;
    assert.deepEqual(props(s.properties?.['spec']), sorted(CONTAINER_NETWORK_LOG_FIELDS.spec));
    assert.deepEqual(props(filter), sorted(CONTAINER_NETWORK_LOG_FIELDS.filter));
    assert.deepEqual(props(filter?.properties?.['from']), sorted(CONTAINER_NETWORK_LOG_FIELDS.endpoint));
    assert.deepEqual(props(filter?.properties?.['to']), sorted(CONTAINER_NETWORK_LOG_FIELDS.endpoint));
    assert.deepEqual(props(s.properties?.['status']), sorted(CONTAINER_NETWORK_LOG_FIELDS.status));
  });
});
