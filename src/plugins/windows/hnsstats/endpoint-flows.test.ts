import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EndpointStats } from '../../../ffi/windows/index.js';
import { EndpointFlows } from './endpoint-flows.js';

const stats = (recv: bigint, sent: bigint, dropIn = 0n): EndpointStats => ({
  packetsReceived: recv, packetsSent: sent, bytesReceived: recv * 100n, bytesSent: sent * 100n, droppedIncoming: dropIn, droppedOutgoing: 0n,
});

it('endpoint counter deltas become flows with the endpoint IP as the pod side', () => {
  const f = new EndpointFlows();
  assert.deepEqual(f.next([{ id: 'a', ip: '10.0.0.5', stats: stats(10n, 20n) }], 1), [], 'the first reading is the baseline');
  const flows = f.next([{ id: 'a', ip: '10.0.0.5', stats: stats(15n, 20n, 2n) }, { id: 'b', ip: 'fd00::7', stats: stats(1n, 1n) }], 2);
  assert.deepEqual(flows.map((x) => [x.verdict, x.direction, x.srcIp, x.dstIp, x.packets, x.bytes, x.dropReason]), [
    ['FORWARDED', 'INGRESS', '0.0.0.0', '10.0.0.5', 5, 500, ''],
    ['DROPPED', 'INGRESS', '0.0.0.0', '10.0.0.5', 2, 0, 'endpoint'],
  ]);
  // b's first reading was its baseline; a's counters went down (re-created endpoint): counted from zero
  const later = f.next([{ id: 'b', ip: 'fd00::7', stats: stats(0n, 3n) }, { id: 'a', ip: '10.0.0.5', stats: stats(1n, 1n) }], 3);
  assert.deepEqual(later.map((x) => [x.direction, x.srcIp, x.dstIp, x.packets, x.ipVersion]), [
    ['EGRESS', 'fd00::7', '::', 2, 6], ['INGRESS', '0.0.0.0', '10.0.0.5', 1, 4], ['EGRESS', '10.0.0.5', '0.0.0.0', 1, 4],
  ]);
  // an endpoint missing from one reading is forgotten: its return is a new baseline
  assert.deepEqual(f.next([{ id: 'b', ip: 'fd00::7', stats: stats(0n, 3n) }], 4), []);
  assert.deepEqual(f.next([{ id: 'a', ip: '10.0.0.5', stats: stats(9n, 9n) }], 5), []);
});
