/**
 * Aggregation: one record per (source, destination, protocol, port, verdict, direction) per interval
 * with flow, packet and byte sums; replies fold under the server's port; the key cap folds the rest
 * into one overflow record so no flow goes uncounted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createFlow, type Flow } from '../flow/index.js';
import { toHubbleFlow } from '../flow/hubble/index.js';
import { createAggregator } from './aggregate.js';
import type { FlowLogRecord } from './types.js';

const tcp = (src: string, dst: string, sport: number, dport: number, extra: Partial<Flow> = {}): Flow =>
  createFlow({ srcIp: src, dstIp: dst, verdict: 'FORWARDED', proto: 6, srcPort: sport, dstPort: dport, packets: 2, bytes: 100, direction: 'EGRESS', timeMs: 1_700_000_000_000, ...extra });

test('one record per key per interval, with sums; a reply folds under the server port', () => {
  const out: FlowLogRecord[][] = [];
  let now = Date.UTC(2026, 0, 1);
  const agg = createAggregator({ intervalMs: 60_000, maxKeys: 100 }, { deliver: (r) => out.push(r), now: () => now });
  const flows = [
    tcp('10.0.0.1', '10.0.0.2', 40000, 80), tcp('10.0.0.1', '10.0.0.2', 40001, 80), tcp('10.0.0.1', '10.0.0.2', 40002, 80),
    tcp('10.0.0.2', '10.0.0.1', 80, 40000, { isReply: true, direction: 'INGRESS' }), tcp('10.0.0.2', '10.0.0.1', 80, 40001, { isReply: true, direction: 'INGRESS' }),
    tcp('10.0.0.1', '10.0.0.2', 40003, 80, { verdict: 'DROPPED' }),
  ];
  for (const f of flows) agg.add(f, toHubbleFlow(f, 'node-a'));
  now += 60_000;
  agg.flush();
  agg[Symbol.dispose]();
  assert.equal(out.length, 1);
  const recs = out[0]!;
  assert.equal(recs.length, 3);
  const fwd = recs[0] as { flow: Record<string, unknown>; node_name: string; time: string };
  assert.deepEqual(fwd.flow['aggregate'], { ingress_flow_count: 0, egress_flow_count: 3, unknown_direction_flow_count: 0, packets: 6, bytes: 300 });
  assert.deepEqual(fwd.flow['l4'], { TCP: { destination_port: 80 } });
  assert.deepEqual(fwd.flow['IP'], { source: '10.0.0.1', destination: '10.0.0.2', ipVersion: 'IPv4' });
  assert.equal(fwd.node_name, 'node-a');
  assert.equal(fwd.time, '2026-01-01T00:01:00Z');
  const reply = recs[1] as { flow: Record<string, unknown> };
  assert.deepEqual(reply.flow['l4'], { TCP: { source_port: 80 } }, 'the reply keyed by its source (server) port');
  assert.equal((reply.flow['aggregate'] as Record<string, number>)['ingress_flow_count'], 2);
  assert.equal((recs[2] as { flow: Record<string, unknown> }).flow['verdict'], 'DROPPED');
});

test('past maxKeys, flows fold into one overflow record per interval', () => {
  const out: FlowLogRecord[] = [];
  const agg = createAggregator({ intervalMs: 60_000, maxKeys: 2 }, { deliver: (r) => out.push(...r) });
  for (let i = 0; i < 5; i++) {
    const f = tcp('10.0.0.1', `10.0.1.${i}`, 40000, 80);
    agg.add(f, toHubbleFlow(f, 'n'));
  }
  agg[Symbol.dispose]();
  assert.equal(out.length, 3);
  const over = out[2] as { flow: Record<string, unknown> };
  assert.deepEqual(over.flow['aggregate'], { ingress_flow_count: 0, egress_flow_count: 3, unknown_direction_flow_count: 0, packets: 6, bytes: 300, overflow: true });
  assert.equal(agg.overflowFlows, 3);
  const flows = out.reduce((n, r) => n + Object.values((r['flow'] as Record<string, Record<string, number>>)['aggregate']!).slice(0, 3).reduce((a, b) => a + Number(b), 0), 0);
  assert.equal(flows, 5, 'every flow counted once');
});

test('an empty interval emits nothing', () => {
  const out: FlowLogRecord[][] = [];
  const agg = createAggregator({ intervalMs: 60_000, maxKeys: 2 }, { deliver: (r) => out.push(r) });
  agg.flush();
  agg[Symbol.dispose]();
  assert.equal(out.length, 0);
});
