import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseEndpoint, parseEndpointIds, parseEndpointStats, parseJsonU64, parsePortMap } from './documents.js';

const fixture = (name: string): string => readFileSync(new URL(`../../../../test/fixtures/windows/${name}`, import.meta.url), 'utf8');
/** Real output, its source in test/fixtures/windows/real/SOURCES.md. */
const real = (name: string): string => fixture(`real/${name}`);

describe('HCN/HNS documents', () => {
  it('u64 counters above 2^53 keep every digit', () => {
    const s = parseEndpointStats(fixture('hns-endpointstats.json'), 'x');
    assert.equal(s.bytesReceived, 18446744073709551615n);
    assert.equal(s.bytesSent, 9007199254740993n);
    assert.equal(s.packetsReceived, 1000n);
    assert.equal(s.droppedOutgoing, 4n);
    assert.equal(JSON.stringify(parseJsonU64('{"a":1.5,"b":-3}', 'x')), '{"a":1.5,"b":-3}');
  });

  it('Success:false and bad fields are errors naming the call and the field', () => {
    assert.throws(() => parseEndpointStats(fixture('hns-endpointstats-failed.json'), 'ep1'), /GET \/endpointstats\/ep1: hns failed with error: Endpoint was not found\./);
    assert.throws(() => parseEndpointStats('{"Success":true,"Output":{"PacketsSent":"12"}}', 'ep1'), /PacketsSent is not an unsigned integer/);
    assert.throws(() => parseEndpointStats('<html>', 'ep1'), /GET \/endpointstats\/ep1: not JSON/);
  });

  it('endpoint IDs, the endpoint document, and endpoints without an IP', () => {
    assert.deepEqual(parseEndpointIds(fixture('hcn-enumerate.json')), ['8F1C2B3A-1D2E-4F50-91A2-B3C4D5E6F708', 'a1b2c3d4-0000-4000-8000-000000000002']);
    assert.deepEqual(parseEndpointIds(''), []);
    assert.deepEqual(parseEndpointIds('null'), []);
    assert.throws(() => parseEndpointIds('{"x":1}'), /HcnEnumerateEndpoints: expected a JSON array/);
    assert.deepEqual(parseEndpoint(fixture('hcn-endpoint.json'), 'id'), { id: '8F1C2B3A-1D2E-4F50-91A2-B3C4D5E6F708', ip: '10.240.0.17', mac: '00-15-5D-9A-FA-8C' });
    assert.equal(parseEndpoint(fixture('hcn-endpoint-noip.json'), 'id').ip, undefined);
    assert.throws(() => parseEndpoint('{"IpConfigurations":[{"IpAddress":7}]}', 'ep9'), /endpoint ep9: IpConfigurations\[0\]\.IpAddress is not a string/);
  });

  it('the "Endpoint Port" allocator gives each endpoint its VFP port, IDs case-insensitive', () => {
    const m = parsePortMap(fixture('hns-endpoints-v1.json'));
    assert.deepEqual([...m], [['8F1C2B3A-1D2E-4F50-91A2-B3C4D5E6F708', 'D3E4F5A6-1234-4567-89AB-CDEF01234567']]);
    assert.throws(() => parsePortMap('{"Success":false,"Error":"access denied"}'), /GET \/endpoints\/: hns failed with error: access denied/);
  });

  it('HNS v1-shaped endpoint documents (real Get-HnsEndpoint output of an AKS node and a Calico node) give their IPAddress', () => {
    // Azure/AKS#1367: `Get-HnsEndpoint | ConvertTo-Json` on an AKS Windows node, a remote endpoint: IPAddress + PrefixLength, no IpConfigurations.
    const aks = JSON.stringify((JSON.parse(real('hns-endpoint-v1-aks.json')) as unknown[])[0]);
    assert.deepEqual(parseEndpoint(aks, 'x'), { id: '2462B2D1-C402-4024-9C86-5A6903AF7759', ip: '10.240.0.11', mac: '02-11-0a-f0-00-0b' });
    // projectcalico/calico#4682: a local pod endpoint on a Calico Windows node.
    assert.deepEqual(parseEndpoint(real('hns-endpoint-v1-calico.json'), 'x'), { id: '89958F54-AEE8-4050-B1E1-CB12A86CE8BC', ip: '10.1.18.67', mac: '0E-2A-0a-01-12-43' });
    // IpConfigurations wins when both are there (the v2 shape); a bad IPAddress is an error naming the field.
    assert.equal(parseEndpoint('{"IPAddress":"10.0.0.9","IpConfigurations":[{"IpAddress":"10.0.0.8"}]}', 'x').ip, '10.0.0.8');
    assert.throws(() => parseEndpoint('{"IPAddress":7}', 'ep9'), /endpoint ep9: IPAddress is not a string/);
    assert.equal(parseEndpoint('{"IPAddress":""}', 'x').ip, undefined, 'an empty IPAddress is no IP');
  });
});
