/**
 * Under Wine: every Windows module loads, every binding binds (iphlpapi: Wine's; computenetwork and
 * vmcompute: the fakes RETINATS_DLL_* name), and HRESULTs, error records and CoTaskMem strings come
 * back as the bindings promise.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import koffi from 'koffi';
import { ATTACHED_SHARING_QUERY, WindowsCallError, openHcn, openHns, openIphlpapi, parseEndpointIds, parseEndpointStats, AF_INET } from '../../../src/ffi/windows/index.js';
import { currentOs, loadPlugins, selectPlatform } from '../../../src/platform/index.js';
import { env } from './wine.js';

const openHandles = (): number => (koffi.load(env('RETINATS_DLL_COMPUTENETWORK')).func('int32_t __stdcall FakeOpenHandles(void)') as () => number)();

describe('Windows modules under Wine', () => {
  it('the platform layer picks Windows and its plugin list (hnsstats, winutil, pktmon)', async () => {
    assert.equal(currentOs(), 'windows');
    const platform = await selectPlatform();
    assert.equal(platform.info.os, 'windows');
    assert.deepEqual((await loadPlugins('windows')).map((p) => p.name), ['hnsstats', 'winutil', 'pktmon']);
  });

  it('iphlpapi binds; GetTcpStatisticsEx answers where Wine lacks GetTcpStatisticsEx2', () => {
    const ip = openIphlpapi();
    assert.ok(ip.interfaces().length > 0, 'GetIfTable2 returned no interfaces');
    const tcp = ip.tcpStats(AF_INET);
    assert.equal(tcp.call, 'GetTcpStatisticsEx');
    assert.ok((tcp.stats['dwInSegs'] ?? 0) > 0);
    assert.ok(ip.tcpStates().reduce((a, b) => a + b, 0) > 0, 'GetTcpTable2/GetTcp6Table2 found no connection');
  });

  it('HcnEnumerateEndpoints sends the State 3 filter and frees the returned string', () => {
    const hcn = openHcn();
    const ids = parseEndpointIds(hcn.enumerateEndpoints(ATTACHED_SHARING_QUERY));
    assert.equal(ids.length, 4);
    assert.equal(ids[1], '00001001-0000-4000-8000-000000000001'.toLowerCase());
  });

  it('an HRESULT with an error record becomes a WindowsCallError naming the call, the code and the message', () => {
    const hcn = openHcn();
    const detachedOnly = JSON.stringify({ SchemaVersion: { Major: 2, Minor: 0 }, Flags: 0, Filter: JSON.stringify({ State: 2 }) });
    assert.throws(() => hcn.enumerateEndpoints(detachedOnly), (e: unknown) => {
      assert.ok(e instanceof WindowsCallError);
      assert.equal(e.call, 'HcnEnumerateEndpoints');
      assert.match(e.message, /HcnEnumerateEndpoints failed: HRESULT 0x80070057: fake: a filter other than State 3 or none/);
      return true;
    });
    assert.throws(() => hcn.endpointProperties('00001001-0000-4000-8000-000000000001', ATTACHED_SHARING_QUERY), /HcnQueryEndpointProperties\(00001001-0000-4000-8000-000000000001\) failed: HRESULT 0x803B0001: fake: the endpoint's compartment is gone/);
    assert.throws(() => hcn.endpointProperties('00001002-0000-4000-8000-000000000002', ATTACHED_SHARING_QUERY), (e: unknown) => e instanceof WindowsCallError && e.notFound && /0x80070490/.test(e.message));
    assert.equal(openHandles(), 0, 'an endpoint handle was left open (HcnCloseEndpoint not called on a failed query)');
  });

  it('HcnOpenEndpoint takes the GUID in Windows byte order and the properties come back as UTF-16 text', () => {
    const doc = JSON.parse(openHcn().endpointProperties('00001003-0000-4000-8000-000000000003', ATTACHED_SHARING_QUERY)) as { ID: string; IpConfigurations: { IpAddress: string }[] };
    assert.equal(doc.ID, '00001003-0000-4000-8000-000000000003');
    assert.equal(doc.IpConfigurations[0]?.IpAddress, '10.240.0.4');
    assert.equal(openHandles(), 0);
  });

  it('HNSCall returns the endpoint counters; Success:false names HNS error text', () => {
    const hns = openHns();
    const stats = parseEndpointStats(hns.call('GET', '/endpointstats/00001003-0000-4000-8000-000000000003'), 'x');
    assert.equal(stats.packetsReceived, 4000n);
    assert.throws(() => parseEndpointStats(hns.call('GET', '/endpointstats/00009999-0000-4000-8000-000000000003'), 'gone'), /hns failed with error: Endpoint was not found/);
  });
});
