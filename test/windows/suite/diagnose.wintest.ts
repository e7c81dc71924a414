/**
 * `retina-agent diagnose` on Windows under Wine: the agent command run with node.exe (as bin's
 * `retina-agent diagnose` runs it) against the fake computenetwork.dll/vmcompute.dll and the vfpctrl
 * `.cmd` stub, and Wine's real iphlpapi. The report is valid JSON with the Windows sections: every
 * endpoint of the fakes (the detached one too), the failing and the vanished endpoint's errors in
 * their rows, each port's VFP counters, the HNS/VFP disagreements (the stub's port list, our own JSON and
 * no real sample, lacks endpoint 3's port and has one no endpoint claims), the interface table and the
 * ETW state; then as text.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import './wine.js';

interface Section { ok: boolean; data?: Record<string, unknown>; error?: string }
type Row = Record<string, unknown>;

function diagnose(format: 'json' | 'text'): string {
  const out = join(mkdtempSync(join(tmpdir(), 'retina-diagnose-')), `report.${format}`);
  // A free port nothing listens on: the `agent` section answers quickly that no agent runs.
  const r = spawnSync(process.execPath, ['dist/src/cli/agent-main.js', 'diagnose', '--format', format, '--output', out, '--timeout', '20s'], {
    encoding: 'utf8', timeout: 240_000, env: { ...process.env, RETINA_APISERVER_HOST: '127.0.0.1', RETINA_APISERVER_PORT: '1', KUBECONFIG: '' },
  });
  assert.equal(r.status, 0, `diagnose exited ${r.status}: ${r.error?.message ?? ''}\n${r.stdout}\n${r.stderr}`);
  return readFileSync(out, 'utf8');
}

const id = (i: number): string => `${(0x1000 + i).toString(16).toUpperCase().padStart(8, '0')}-0000-4000-8000-${i.toString(16).toUpperCase().padStart(12, '0')}`;

describe('retina-agent diagnose on Windows (fake HCN/HNS, vfpctrl stub, Wine iphlpapi)', () => {
  let report: { os: string; sections: Record<string, Section> };

  it('writes valid JSON with the hns, vfp, interfaces and etw sections', { timeout: 300_000 }, () => {
    report = JSON.parse(diagnose('json')) as typeof report;
    assert.equal(report.os, 'windows');
    for (const name of ['hns', 'vfp', 'hns-vfp', 'interfaces', 'etw']) assert.equal(report.sections[name]?.ok, true, `${name}: ${JSON.stringify(report.sections[name])}`);
    assert.equal(report.sections['windows'], undefined, 'the "windows part is missing" section is still there');
  });

  it('hns: the network and every endpoint (the detached one too); the failing and the vanished one carry their errors', () => {
    const hns = report.sections['hns']?.data as { networks: Row[]; endpointCount: number; endpoints: Row[] };
    assert.deepEqual(hns.networks.map((n) => [n['name'], n['type'], n['subnets'], n['policies']]), [['azure', 'L2Bridge', ['10.240.0.0/16'], 'RemoteSubnetRoute']]);
    assert.equal(hns.endpointCount, 5);
    const byId = new Map(hns.endpoints.map((e) => [String(e['id']).toUpperCase(), e]));
    assert.deepEqual([...byId.keys()], [0, 1, 2, 3, 4].map(id));
    assert.deepEqual(byId.get(id(0)), { id: id(0), name: 'ep0', network: '0000A000-0000-4000-8000-000000000000', state: 3, ips: ['10.240.0.1/16'], mac: '00-15-5D-00-00-00' });
    assert.match(String(byId.get(id(1))?.['error']), /HcnQueryEndpointProperties\(.*\) failed: HRESULT 0x803B0001: fake: the endpoint's compartment is gone/);
    assert.match(String(byId.get(id(2))?.['error']), /gone since it was listed.*0x80070490/);
    assert.equal(byId.get(id(4))?.['state'], 2, 'the detached endpoint (State 2) is listed');
    assert.equal(byId.get(id(4))?.['policies'], 'OutBoundNAT, ACL x2');
  });

  it('vfp: each endpoint\'s port with its counters from vfpctrl', () => {
    const vfp = report.sections['vfp']?.data as { portCount: number; ports: Row[] };
    assert.equal(vfp.portCount, 4);
    assert.deepEqual(vfp.ports.map((p) => [p['endpoint'], p['direction']]), [0, 1, 2, 3].flatMap((i) => [[id(i), 'in'], [id(i), 'out']]));
    const p0 = vfp.ports.filter((p) => p['endpoint'] === id(0));
    assert.equal(p0[0]?.['port'], '00002000-0000-4000-8000-000000000000');
    assert.deepEqual([p0[0]?.['syn'], p0[0]?.['aclDrops'], p0[1]?.['syn'], p0[1]?.['aclDrops']], [111, 122, 11, 22]);
  });

  it('hns-vfp: endpoint 3\'s port is not a VFP port, and one VFP port has no endpoint (fake list: no real sample)', () => {
    const d = report.sections['hns-vfp']?.data as { disagreements: string; endpointsChecked: number; portsChecked: number; endpointsWithoutPort: Row[]; portsWithoutEndpoint: Row[] };
    assert.equal(d.disagreements, '1 endpoint without a VFP port, 1 VFP port without an endpoint');
    assert.deepEqual(d.endpointsWithoutPort, [{ endpoint: id(3), port: '00002003-0000-4000-8000-000000000003', reason: 'its HNS port is not a VFP port' }]);
    assert.deepEqual(d.portsWithoutEndpoint, [{ port: '00002FFF-0000-4000-8000-000000000FFF', id: '0000DEAD-0000-4000-8000-000000000FFF', mac: '00155D000FFF' }]);
    assert.deepEqual([d.endpointsChecked, d.portsChecked], [4, 4], 'the attached endpoints 0..3; ExternalPort and the Container NIC left out');
  });

  it('interfaces: Wine\'s GetIfTable2 rows with name, alias, type, MAC, MTU and state', () => {
    const rows = report.sections['interfaces']?.data as unknown as Row[];
    const lo = rows.find((r) => r['type'] === 'loopback');
    assert.ok(lo, `no loopback among ${JSON.stringify(rows)}`);
    assert.equal(lo['state'], 'up');
    assert.ok(rows.some((r) => typeof r['mac'] === 'string' && /^([0-9A-F]{2}-){5}[0-9A-F]{2}$/.test(r['mac']) && Number(r['mtu']) > 0), JSON.stringify(rows));
  });

  it('etw: the pktmon session is looked up by name (ControlTraceW QUERY on the fake ETW DLL: no session runs)', () => {
    assert.deepEqual(report.sections['etw']?.data, { session: 'retina-ts-pktmon', consumer: 'pktmon plugin (pod level)', running: false });
  });

  it('--format text renders the Windows sections as tables', { timeout: 300_000 }, () => {
    const text = diagnose('text');
    assert.match(text, /^== hns \(ok, \d+ ms\) ==$/m);
    assert.match(text, /^== vfp \(ok, \d+ ms\) ==$/m);
    assert.match(text, /^ +ID +NAME +NETWORK +STATE +IPS +MAC/m);
    assert.match(text, /^ +ENDPOINT +PORT +DIRECTION +SYN +SYNACK/m);
    assert.match(text, /^ +00001001-0000-4000-8000-000000000001 .*HcnQueryEndpointProperties/im, 'the failing endpoint\'s row with its error');
    assert.match(text, /^== hns-vfp \(ok, \d+ ms\) ==\n  disagreements: 1 endpoint without a VFP port, 1 VFP port without an endpoint$/m);
    assert.match(text, /^== etw \(ok, \d+ ms\) ==\n  session: retina-ts-pktmon$/m);
  });
});
