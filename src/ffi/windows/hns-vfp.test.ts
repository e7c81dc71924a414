import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { compareHnsVfp } from './hns-vfp.js';
import { parseVfpSwitchPorts, type VfpSwitchPort } from './vfp.js';
import { parsePortMap, parseRemoteEndpoints } from './documents.js';

const fixture = (name: string): string => readFileSync(new URL(`../../../../test/fixtures/windows/${name}`, import.meta.url), 'utf8');
const id = (i: number): string => `${(0x1000 + i).toString(16).toUpperCase().padStart(8, '0')}-0000-4000-8000-${i.toString(16).toUpperCase().padStart(12, '0')}`;
const port = (i: number): string => `${(0x2000 + i).toString(16).toUpperCase().padStart(8, '0')}-0000-4000-8000-${i.toString(16).toUpperCase().padStart(12, '0')}`;
const vp = (name: string, id?: string): VfpSwitchPort => ({ name, id, vmsPortId: undefined, mac: undefined });

describe('vfpctrl /list-vmswitch-port /format 1 (our own fixture: no real sample found)', () => {
  it('reads every port with Name, Id, VmsPortId and MacAddress (no real sample)', () => {
    const r = parseVfpSwitchPorts(fixture('vfp-list-vmswitch-port.json'));
    assert.deepEqual(r.issues, []);
    assert.equal(r.ports.length, 6);
    assert.deepEqual(r.ports[0], { name: '5D2A7B0C-1E4F-4A3B-9C8D-7E6F5A4B3C2D', id: 'ExternalPort', vmsPortId: 1, mac: '000D3A6B1C2D' });
    assert.equal(r.ports[1]?.id, 'Container NIC 5f3c7a2e');
  });

  it('a port without a Name is an issue naming its index and the field; the other ports are kept', () => {
    const r = parseVfpSwitchPorts('\uFEFF{"Ports":[{"Id":"x"},7,{"Name":"A-1","Id":"ep","VmsPortId":"9"}]}');
    assert.deepEqual(r.issues, ['Ports[0]: Name is not a port GUID (missing)', 'Ports[1]: not an object']);
    assert.deepEqual(r.ports, [{ name: 'A-1', id: 'ep', vmsPortId: undefined, mac: undefined }]);
  });

  it('text that is not the list is an error saying what is wrong', () => {
    assert.throws(() => parseVfpSwitchPorts('Error: the switch is not found'), /vfpctrl \/list-vmswitch-port: not JSON .*"Error: the switch is not found"/);
    assert.throws(() => parseVfpSwitchPorts('[1]'), /expected a JSON object/);
    assert.throws(() => parseVfpSwitchPorts('{"Ports":{}}'), /Ports is not an array/);
    assert.deepEqual(parseVfpSwitchPorts('{}'), { ports: [], issues: [] });
  });
});

describe('HNS/VFP disagreements', () => {
  it('fixture: an endpoint whose port VFP does not list, and a VFP port no endpoint claims; the switch\'s own ports left out (no real sample)', () => {
    const vfp = parseVfpSwitchPorts(fixture('vfp-list-vmswitch-port.json')).ports;
    const portOf = new Map([0, 1, 2, 3].map((i) => [id(i), port(i)]));
    const d = compareHnsVfp({ endpoints: [0, 1, 2, 3].map(id), portOf, remote: new Set(), vfp });
    assert.deepEqual(d.endpointsWithoutPort, [{ endpoint: id(3), port: port(3), reason: 'its HNS port is not a VFP port' }]);
    assert.deepEqual(d.portsWithoutEndpoint, [{ port: '00002FFF-0000-4000-8000-000000000FFF', id: '0000DEAD-0000-4000-8000-000000000FFF', mac: '00155D000FFF' }]);
    assert.equal(d.endpointsChecked, 4);
    assert.equal(d.portsChecked, 4);
  });

  it('GUIDs match whatever their case and braces; no disagreement gives empty lists', () => {
    const d = compareHnsVfp({ endpoints: [id(1).toLowerCase()], portOf: new Map([[id(1), `{${port(1).toLowerCase()}}`]]), remote: new Set(), vfp: [vp(port(1), id(1))] });
    assert.deepEqual([d.endpointsWithoutPort, d.portsWithoutEndpoint, d.endpointsChecked, d.portsChecked], [[], [], 1, 1]);
  });

  it('an endpoint HNS gives no port is named; a remote endpoint is not checked', () => {
    const d = compareHnsVfp({ endpoints: [id(0), id(5)], portOf: new Map(), remote: new Set([id(5)]), vfp: [] });
    assert.deepEqual(d.endpointsWithoutPort, [{ endpoint: id(0), port: undefined, reason: 'HNS gives it no "Endpoint Port"' }]);
    assert.equal(d.endpointsChecked, 1);
  });

  it('a port HNS assigns to an endpoint outside the checked list is claimed (not reported)', () => {
    const d = compareHnsVfp({ endpoints: [], portOf: new Map([[id(7), port(7)]]), remote: new Set(), vfp: [vp(port(7), id(7)), vp(port(8), 'Container NIC 1a2b3c4d')] });
    assert.deepEqual([d.portsWithoutEndpoint, d.portsChecked], [[], 1]);
  });

  it('HNS v1 endpoints: the remote ones (IsRemoteEndpoint) are read; a malformed list is an error naming Output', () => {
    const text = JSON.stringify({ Success: true, Output: [{ ID: id(0).toLowerCase(), IsRemoteEndpoint: true }, { ID: id(1) }, { IsRemoteEndpoint: true }] });
    assert.deepEqual([...parseRemoteEndpoints(text)], [id(0)]);
    assert.throws(() => parseRemoteEndpoints('{"Success":true,"Output":{}}'), /GET \/endpoints\/: Output is not an array/);
    assert.equal(parsePortMap(text).size, 0);
  });
});
