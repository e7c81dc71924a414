import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { IfRow } from '../../../ffi/windows/index.js';
import { winutilRows } from './rows.js';

const ifRow = (alias: string, type: number, flags: number, k: number): IfRow => ({
  index: k, alias, description: alias, operStatus: 1, type, flags, mac: '', mtu: 1500, transmitBps: 0, receiveBps: 0,
  counters: { InOctets: 100 * k, InUcastPkts: 10 * k, InNUcastPkts: k, InDiscards: 2, InErrors: 3, OutOctets: 200 * k, OutUcastPkts: 20 * k, OutNUcastPkts: 0, OutDiscards: 4, OutErrors: 5 },
});

it('maps iphlpapi values to linuxutil names: TCP summed over families, IP/UDP per family, interfaces by alias', () => {
  const states = [0, 1, 2, 0, 0, 7, 0, 0, 0, 0, 0, 3, 9];
  const r = winutilRows({
    tcpStates: states,
    tcp4: { dwInSegs: 10, dwCurrEstab: 2 }, tcp6: { dwInSegs: 5, dwCurrEstab: 1 },
    ip4: { dwInReceives: 100 }, ip6: { dwInReceives: 50, dwForwDatagrams: 3 },
    udp4: { dwInDatagrams: 7, dwNumAddrs: 2 }, udp6: { dwInDatagrams: 1, dwNumAddrs: 1 },
    interfaces: [ifRow('Ethernet', 6, 1, 2), ifRow('Loopback Pseudo-Interface 1', 24, 0, 1), ifRow('Ethernet-WFP Native MAC Layer LightWeight Filter-0000', 6, 2, 1)],
  });
  const get = (rows: readonly (readonly [Readonly<Record<string, string>>, number])[], labels: Record<string, string>): number | undefined =>
    rows.find(([l]) => JSON.stringify(l) === JSON.stringify(labels))?.[1];
  assert.equal(get(r.tcpState, { state: 'ESTABLISHED' }), 7);
  assert.equal(get(r.tcpState, { state: 'CLOSE' }), 1);
  assert.equal(get(r.tcpState, { state: 'LISTEN' }), 2);
  assert.equal(get(r.tcpState, { state: 'TIME_WAIT' }), 3);
  assert.equal(r.tcpState.length, 11, 'DELETE_TCB has no Linux name');
  assert.equal(get(r.tcpConnectionStats, { statistic_name: 'InSegs' }), 15);
  assert.equal(get(r.tcpConnectionStats, { statistic_name: 'CurrEstab' }), 3);
  assert.equal(get(r.ipConnectionStats, { statistic_name: 'InReceives' }), 100);
  assert.equal(get(r.ipConnectionStats, { statistic_name: 'Ip6InReceives' }), 50);
  assert.equal(get(r.ipConnectionStats, { statistic_name: 'Ip6OutForwDatagrams' }), 3);
  assert.equal(get(r.udpConnectionStats, { statistic_name: 'ACTIVE' }), 3);
  assert.equal(get(r.udpConnectionStats, { statistic_name: 'Udp6InDatagrams' }), 1);
  assert.deepEqual([...new Set(r.interfaceStats.map(([l]) => l['interface_name']))], ['Ethernet'], 'loopback and filter interfaces are left out');
  assert.equal(get(r.interfaceStats, { interface_name: 'Ethernet', statistic_name: 'rx_packets' }), 22);
  assert.equal(get(r.interfaceStats, { interface_name: 'Ethernet', statistic_name: 'tx_dropped' }), 4);
});

it('a family whose call failed has no rows', () => {
  const r = winutilRows({});
  assert.deepEqual(r, { tcpState: [], tcpConnectionStats: [], ipConnectionStats: [], udpConnectionStats: [], interfaceStats: [] });
});
