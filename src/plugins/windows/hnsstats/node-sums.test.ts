import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EndpointStats } from '../../../ffi/windows/index.js';
import { nodeRows, type EndpointReading } from './node-sums.js';
import { parseVfpCounters } from '../../../ffi/windows/index.js';

const stats = (k: bigint): EndpointStats => ({
  packetsReceived: 10n * k, packetsSent: 20n * k, bytesReceived: 1000n * k, bytesSent: 2000n * k, droppedIncoming: k, droppedOutgoing: 2n * k,
});

it('node series are sums over all endpoints, not the last endpoint (Retina sets each gauge per endpoint)', () => {
  const vfp = parseVfpCounters('Direction - OUT\r\nSYN packets : 3\r\nDropped ACL packets : 1\r\nTCP Connections Verified : 2\r\nDirection - IN\r\nSYN packets : 5\r\nDropped ACL packets : 4\r\nTCP Connections Verified : 7\r\n');
  const list: EndpointReading[] = [
    { id: 'a', ip: '10.0.0.1', stats: stats(1n), vfp },
    { id: 'b', ip: '10.0.0.2', stats: stats(2n), vfp },
    { id: 'c', ip: '10.0.0.3', stats: stats(4n) }, // no VFP port
  ];
  const r = nodeRows(list);
  const get = (rows: readonly (readonly [Readonly<Record<string, string>>, number])[], labels: Record<string, string>): number | undefined =>
    rows.find(([l]) => JSON.stringify(l) === JSON.stringify(labels))?.[1];
  assert.equal(get(r.forwardCount, { direction: 'ingress' }), 70); // 10 + 20 + 40; Retina would show 40
  assert.equal(get(r.forwardCount, { direction: 'egress' }), 140);
  assert.equal(get(r.forwardBytes, { direction: 'ingress' }), 7000);
  assert.equal(get(r.dropCount, { reason: 'endpoint', direction: 'ingress' }), 7);
  assert.equal(get(r.dropCount, { reason: 'endpoint', direction: 'egress' }), 14);
  assert.equal(get(r.dropCount, { reason: 'aclrule', direction: 'ingress' }), 8);
  assert.equal(get(r.dropCount, { reason: 'aclrule', direction: 'egress' }), 2);
  assert.equal(get(r.windowsHnsStats, { direction: 'win_packets_recv_count' }), 70);
  assert.equal(get(r.windowsHnsStats, { direction: 'win_packets_sent_count' }), 140);
  assert.equal(get(r.tcpFlagGauges, { direction: 'ingress', flag: 'SYN' }), 10);
  assert.equal(get(r.tcpFlagGauges, { direction: 'egress', flag: 'SYN' }), 6);
  assert.equal(get(r.tcpConnectionStats, { statistic_name: 'Verified' }), 18); // both directions (Retina: IN only)
  assert.equal(r.tcpConnectionStats.length, 7);
});

it('u64 sums stay exact until published; no VFP data means no VFP series', () => {
  const big = { ...stats(1n), bytesReceived: 2n ** 53n + 1n };
  const r = nodeRows([{ id: 'a', ip: 'x', stats: big }, { id: 'b', ip: 'y', stats: big }]);
  assert.equal(r.forwardBytes[0]?.[1], Number(2n ** 54n + 2n));
  assert.deepEqual(r.tcpFlagGauges, []);
  assert.deepEqual(r.tcpConnectionStats, []);
  assert.equal(r.dropCount.length, 2);
});
