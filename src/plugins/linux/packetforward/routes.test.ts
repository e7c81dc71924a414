import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultRouteInterfaces, defaultRouteInterfacesV4, defaultRouteInterfacesV6 } from './routes.js';

const ROUTE = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0000A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
cni0\t0000F40A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
eth1\t00000000\t0101A8C0\t0003\t0\t0\t200\t00000000\t0\t0\t0
`;

const ROUTE6 = `00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0
fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003    ens5
`;

test('IPv4 default routes: destination and mask zero, up, not lo', () => {
  assert.deepEqual(defaultRouteInterfacesV4(ROUTE), ['eth0', 'eth1']);
  assert.deepEqual(defaultRouteInterfacesV4('Iface\tDestination\n'), []);
});

test('IPv6 default routes: ::/0, up, not reject, not lo', () => {
  assert.deepEqual(defaultRouteInterfacesV6(ROUTE6), ['eth0', 'ens5']);
});

test('both families, IPv4 first, unreadable files count as none', () => {
  const files: Record<string, string> = { '/proc/net/route': ROUTE, '/proc/net/ipv6_route': ROUTE6 };
  assert.deepEqual(defaultRouteInterfaces((p) => files[p] ?? ''), ['eth0', 'eth1', 'ens5']);
  assert.deepEqual(defaultRouteInterfaces(() => { throw new Error('EACCES'); }), []);
});
