/**
 * The protojson writer against protobuf's JSON mapping rules (zero values left out, Timestamp as
 * RFC 3339, wrappers bare, oneof members kept) and field masks that name their bad path.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow } from '../index.js';
import { FieldMaskError, loadFlowProtos, rfc3339 } from './json.js';
import { toHubbleFlow } from './map.js';

const { json } = loadFlowProtos(fileURLToPath(new URL('../../../../proto/hubble', import.meta.url)));

test('RFC 3339 with 0, 3, 6 or 9 fraction digits, as protojson writes a Timestamp', () => {
  assert.equal(rfc3339({ seconds: 1700000000, nanos: 0 }), '2023-11-14T22:13:20Z');
  assert.equal(rfc3339({ seconds: 1700000000, nanos: 120_000_000 }), '2023-11-14T22:13:20.120Z');
  assert.equal(rfc3339({ seconds: 1700000000, nanos: 123_456_000 }), '2023-11-14T22:13:20.123456Z');
  assert.equal(rfc3339({ seconds: 1700000000, nanos: 5 }), '2023-11-14T22:13:20.000000005Z');
});

test('a TCP flow: proto names, zero values left out, is_reply bare, nested messages kept', () => {
  const f = createFlow({
    srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 1234, dstPort: 80, tcpFlags: 2 | 16,
    direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT', isReply: false, timeMs: 1700000000000,
  });
  const out = json.flow(toHubbleFlow(f, 'node-a'));
  assert.deepEqual(out, {
    time: '2023-11-14T22:13:20Z', verdict: 'FORWARDED', IP: { source: '10.0.0.1', destination: '10.0.0.2', ipVersion: 'IPv4' },
    l4: { TCP: { source_port: 1234, destination_port: 80, flags: { SYN: true, ACK: true } } }, Type: 'L3_L4', node_name: 'node-a',
    event_type: { type: 4, sub_type: 5 }, traffic_direction: 'EGRESS', trace_observation_point: 'FROM_ENDPOINT', is_reply: false,
    Summary: 'TCP Flags: SYN, ACK',
  });
  // Declaration order, as protojson writes fields.
  assert.deepEqual(Object.keys(out), ['time', 'verdict', 'IP', 'l4', 'Type', 'node_name', 'event_type', 'traffic_direction', 'trace_observation_point', 'is_reply', 'Summary']);
});

test('zero scalars and the enum zero are left out; a set oneof member and an empty message stay', () => {
  const out = json.flow({ verdict: 'VERDICT_UNKNOWN', l4: { ICMPv4: {} }, event_type: { type: 4, sub_type: 0 }, Summary: '', source: { ID: 0, labels: [] } });
  assert.deepEqual(out, { l4: { ICMPv4: {} }, source: {}, event_type: { type: 4 } });
});

test('field masks keep the named fields only and name a bad path', () => {
  const f = createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'DROPPED', proto: 17, srcPort: 5, dstPort: 53, timeMs: 1700000000000,
    source: { namespace: 'ns', podName: 'p', workloadKind: '', workloadName: '', service: '', nodeName: '', zone: '', labels: { a: 'b' } } });
  const mask = json.mask(['time', 'source.namespace', 'l4.UDP.destination_port', 'verdict']);
  assert.deepEqual(json.flow(toHubbleFlow(f, 'n'), mask), { time: '2023-11-14T22:13:20Z', verdict: 'DROPPED', l4: { UDP: { destination_port: 53 } }, source: { namespace: 'ns' } });
  assert.equal(json.mask([]), undefined);
  assert.throws(() => json.mask(['time', 'source.nope']), (e: unknown) => e instanceof FieldMaskError && e.path === 'source.nope' && /nope is not a field of flow.Endpoint/.test(e.message));
  assert.throws(() => json.mask(['verdict.x']), (e: unknown) => e instanceof FieldMaskError && /has no fields/.test(e.message));
});
