/** readHns over in-memory sources (the same paths run against the fake DLLs under Wine). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { WindowsCallError } from '../../../ffi/windows/index.js';
import { readHns, type HnsSources } from './collect.js';

const vfpText = readFileSync(new URL('../../../../../test/fixtures/windows/vfp-port-counter.txt', import.meta.url), 'utf8');
const id = (i: number): string => `0000000${i}-0000-4000-8000-00000000000${i}`;
const stats = (k: number): string => JSON.stringify({ Success: true, Output: { PacketsReceived: k, PacketsSent: k, BytesReceived: k, BytesSent: k, DroppedPacketsIncoming: 0, DroppedPacketsOutgoing: 0 } });

/** The vSwitch's ports: P-1 (endpoint 1's), the switch's own two, and P-9, which no endpoint claims (our own list: no real sample). */
const switchList = JSON.stringify({ Ports: [{ Name: 'P-1', Id: id(1) }, { Name: 'P-X', Id: 'ExternalPort' }, { Name: 'P-H', Id: 'Container NIC 0a1b2c3d' }, { Name: 'P-9', Id: 'orphan', MacAddress: '00155D000009' }] });

function sources(vfp: HnsSources['vfpctrl'], vfpList: HnsSources['vfpList'] = async () => switchList): HnsSources {
  return {
    hcn: {
      enumerateEndpoints: () => JSON.stringify([1, 2, 3, 4, 5].map(id)),
      endpointProperties: (ep) => {
        if (ep === id(2)) throw new WindowsCallError('HcnOpenEndpoint', 0x80070490 | 0, 'HRESULT', '{"Error":"gone"}');
        if (ep === id(3)) throw new WindowsCallError('HcnQueryEndpointProperties', 0x803b0001 | 0, 'HRESULT', '{"Error":"broken"}');
        if (ep === id(5)) return JSON.stringify({ ID: ep }); // no IP: left out, as in Retina
        return JSON.stringify({ ID: ep, IpConfigurations: [{ IpAddress: `10.0.0.${ep[7]}` }] });
      },
    },
    hns: {
      call: (_m, path) => {
        if (path === '/endpoints/') return JSON.stringify({ Success: true, Output: [{ ID: id(1), Resources: { Allocators: [{ Tag: 'Endpoint Port', EndpointPortGuid: 'P-1' }] } }, { ID: id(4), Resources: { Allocators: [{ Tag: 'Endpoint Port', EndpointPortGuid: 'P-4' }] } }] });
        return stats(Number(path.at(-1)));
      },
    },
    vfpctrl: vfp,
    vfpList,
  };
}

it('reads every endpoint it can: vanished skipped, failures named, no-IP endpoints left out, VFP per port', async () => {
  const r = await readHns(sources(async (ports) => new Map(ports.map((p) => [p, p === 'P-4' ? 'Error: port not found\r\n' : vfpText]))));
  assert.deepEqual(r.endpoints.map((e) => [e.ip, e.stats.packetsReceived, e.vfp?.in.syn]), [['10.0.0.1', 1n, 111n], ['10.0.0.4', 4n, undefined]]);
  assert.equal(r.vanished, 1);
  assert.deepEqual(r.failures, [
    `endpoint ${id(3)}: HcnQueryEndpointProperties failed: HRESULT 0x803B0001: broken`,
    `vfpctrl port P-4 of ${id(4)}: no counters in its output ("Error: port not found")`,
  ]);
});

it('vfpctrl failing as a whole keeps the HNS counters and names the failure', async () => {
  const r = await readHns(sources(() => Promise.reject(new Error('cmd.exe: not found'))));
  assert.equal(r.endpoints.length, 2);
  assert.ok(r.endpoints.every((e) => e.vfp === undefined));
  assert.ok(r.failures.includes('vfpctrl: cmd.exe: not found'), r.failures.join('\n'));
});

it('an endpoint whose document is HNS v1-shaped (IPAddress, no IpConfigurations: real AKS Get-HnsEndpoint output) is read, not dropped', async () => {
  const aks = JSON.stringify((JSON.parse(readFileSync(new URL('../../../../../test/fixtures/windows/real/hns-endpoint-v1-aks.json', import.meta.url), 'utf8')) as unknown[])[0]);
  const src = sources(async (ports) => new Map(ports.map((p) => [p, vfpText])));
  const r = await readHns({ ...src, hcn: { enumerateEndpoints: () => JSON.stringify([id(1)]), endpointProperties: () => aks } });
  assert.deepEqual(r.endpoints.map((e) => [e.id, e.ip, e.stats.packetsReceived]), [[id(1), '10.240.0.11', 1n]]);
  assert.deepEqual(r.failures, []);
});

it('an endpoint HCN says is gone with its own code (HCN_E_ENDPOINT_NOT_FOUND, 0x803B0002) counts as vanished, not as a failure', async () => {
  const record = readFileSync(new URL('../../../../../test/fixtures/windows/hcn-error-record.json', import.meta.url), 'utf8');
  const src = sources(async (ports) => new Map(ports.map((p) => [p, vfpText])));
  const r = await readHns({ ...src, hcn: { ...src.hcn, endpointProperties: (ep, query) => {
    if (ep === id(3)) throw new WindowsCallError('HcnQueryEndpointProperties', 0x803b0002 | 0, 'HRESULT', record);
    return src.hcn.endpointProperties(ep, query);
  } } });
  assert.equal(r.vanished, 2, 'endpoint 2 (ERROR_NOT_FOUND) and endpoint 3 (HCN_E_ENDPOINT_NOT_FOUND)');
  assert.deepEqual(r.failures, [], 'nothing to mark the plugin degraded');
  assert.deepEqual(r.endpoints.map((e) => e.ip), ['10.0.0.1', '10.0.0.4']);
});

it('HNS/VFP disagreements: endpoints whose port VFP lacks or that have none, and the port no endpoint claims (no real sample)', async () => {
  const r = await readHns(sources(async (ports) => new Map(ports.map((p) => [p, vfpText]))));
  // 1..5 enumerated, 2 vanished: 1 has its port; 3 and 5 have none in HNS; 4's port P-4 is not a VFP port.
  assert.deepEqual(r.disagreements?.endpointsWithoutPort.map((e) => [e.endpoint, e.port]), [[id(3), undefined], [id(4), 'P-4'], [id(5), undefined]]);
  assert.deepEqual(r.disagreements?.portsWithoutEndpoint, [{ port: 'P-9', id: 'orphan', mac: '00155D000009' }]);
  assert.equal(r.disagreements?.endpointsChecked, 4);
});

it('a VFP port list that cannot be run is a named failure and gives no disagreements; a bad port in it is named and the rest compared', async () => {
  const vfp = async (ports: readonly string[]): Promise<Map<string, string>> => new Map(ports.map((p) => [p, vfpText]));
  const failed = await readHns(sources(vfp, () => Promise.reject(new Error('cmd.exe: vfpctrl is not recognized'))));
  assert.equal(failed.disagreements, undefined);
  assert.ok(failed.failures.includes('VFP port list: cmd.exe: vfpctrl is not recognized'), failed.failures.join('\n'));
  assert.equal(failed.endpoints.length, 2, 'the counters are still read');
  const bad = await readHns(sources(vfp, async () => JSON.stringify({ Ports: [{ Name: 'P-1' }, { Name: 42 }, { Name: 'P-4' }] })));
  assert.ok(bad.failures.includes('vfpctrl /list-vmswitch-port: Ports[1]: Name is not a port GUID (42)'), bad.failures.join('\n'));
  assert.deepEqual(bad.disagreements?.endpointsWithoutPort.map((e) => e.endpoint), [id(3), id(5)]);
  assert.deepEqual(bad.disagreements?.portsWithoutEndpoint, []);
});
