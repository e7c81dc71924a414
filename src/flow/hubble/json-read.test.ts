/**
 * The protojson reader against the writer: a flow written as a stored line and read back is the flow
 * the ring serves (the same object but for what protojson cannot carry: proto3 zero values and the
 * oneof names proto-loader adds), writes back to the same line, and every filter answers it alike.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow, type Endpoint, type Flow } from '../index.js';
import { hubbleProtoFiles, FLOW_PROTO_FILES } from './protos.js';
import { createFlowJson } from './json.js';
import { createFlowJsonReader, parseRfc3339 } from './json-read.js';
import { compileFlowFilters } from './filter.js';
import { flowEnums } from './enums.js';
import { toHubbleFlow } from './map.js';

const def = hubbleProtoFiles(fileURLToPath(new URL('../../../../proto/hubble', import.meta.url)), FLOW_PROTO_FILES).definition();
const json = createFlowJson(def);
const reader = createFlowJsonReader(def);
const enums = flowEnums(def);

const ep = (ns: string, pod: string, app: string, service = ''): Endpoint => Object.freeze({
  namespace: ns, podName: pod, workloadKind: 'Deployment', workloadName: app, service, nodeName: 'node-a', zone: '', labels: Object.freeze({ app }),
});
const web = ep('shop', 'web-0', 'web', 'web-svc');
const db = ep('shop', 'db-0', 'db');
const T = 1_764_400_000_123.456;

const FLOWS: Flow[] = [
  createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 5432, tcpFlags: 2, direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT', isReply: false, source: web, destination: db, timeMs: T }),
  createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.9', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: 40001, dstPort: 9999, direction: 'EGRESS', source: web, timeMs: T + 1 }),
  createFlow({ srcIp: '10.0.0.2', dstIp: '10.0.0.1', verdict: 'FORWARDED', proto: 6, srcPort: 5432, dstPort: 40000, tcpFlags: 18, direction: 'INGRESS', observationPoint: 'TO_ENDPOINT', isReply: true, source: db, destination: web, timeMs: T + 2 }),
  createFlow({ srcIp: '10.0.0.53', dstIp: '10.0.0.1', verdict: 'DNS', proto: 17, srcPort: 53, dstPort: 40002, direction: 'INGRESS', isReply: true, destination: web, timeMs: T + 3,
    dns: { query: 'example.com', qtype: 'A', rcode: 'NXDOMAIN', answers: [], isResponse: true, numAnswers: 0 } }),
  createFlow({ srcIp: 'fd00::1', dstIp: 'fd00::2', ipVersion: 6, verdict: 'FORWARDED', proto: 58, direction: 'INGRESS', timeMs: 1_764_400_000_000 }),
  createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'RETRANSMISSION', proto: 6, srcPort: 40000, dstPort: 5432, tcpFlags: 16, source: web, destination: db, timeMs: T + 4 }),
];

/** The object with what protojson cannot carry taken out: zero scalars, the enum's zero, empty lists, and proto-loader's oneof names. */
function carried(v: unknown): unknown {
  if (Array.isArray(v)) return v.length ? v.map(carried) : undefined;
  if (v === null || typeof v !== 'object') return v === 0 || v === '' || v === false ? undefined : v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'protocol' || k === 'record') continue;
    const c = carried(x);
    if (c !== undefined) out[k] = c;
  }
  return out;
}

test('round trip: flow → stored line → flow object is the ring\'s flow object, and writes back to the same line', () => {
  for (const f of FLOWS) {
    const hubble = toHubbleFlow(f, 'node-a');
    const line = JSON.stringify(json.flow(hubble));
    const back = reader.flow(JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(carried(back), carried(hubble), line);
    assert.equal(JSON.stringify(json.flow(back)), line);
  }
  // A Timestamp keeps its nanoseconds (no detour through ms).
  const line = JSON.stringify(json.flow({ time: { seconds: 1764400000, nanos: 123456789 } }));
  assert.deepEqual(reader.flow(JSON.parse(line) as Record<string, unknown>), { time: { seconds: 1764400000, nanos: 123456789 } });
});

test('every filter answers a read-back flow as it answers the ring\'s', () => {
  const filters: Record<string, unknown>[] = [
    { verdict: ['DROPPED'] }, { verdict: ['FORWARDED'] }, { source_pod: ['shop/web'] }, { destination_pod: ['shop/db-0'] }, { protocol: ['tcp'] }, { protocol: ['dns'] },
    { protocol: ['icmp'] }, { destination_port: ['9999'] }, { reply: [true] }, { reply: [false] }, { tcp_flags: [{ SYN: true }] }, { dns_query: ['example'] },
    { source_label: ['k8s:app=web'] }, { source_workload: [{ name: 'web' }] }, { source_service: ['shop/web-svc'] }, { traffic_direction: ['INGRESS'] },
    { event_type: [{ type: 1 }] }, { event_type: [{ type: 4, sub_type: 5 }] }, { ip_version: ['IPv6'] }, { source_ip: ['10.0.0.0/24'] }, { node_name: ['node-a'] },
  ];
  for (const filter of filters) {
    const m = compileFlowFilters([filter], [], enums);
    for (const f of FLOWS) {
      const hubble = toHubbleFlow(f, 'node-a');
      const back = reader.flow(JSON.parse(JSON.stringify(json.flow(hubble))) as Record<string, unknown>);
      assert.equal(m.match(back), m.match(hubble), `${JSON.stringify(filter)} on ${JSON.stringify(json.flow(hubble))}`);
    }
  }
});

test('protojson as others write it: lowerCamel names, 64-bit strings, enum numbers, bare wrappers; unknown keys passed over; bad types refused', () => {
  const back = reader.flow({
    time: '2026-11-29T07:00:00.5+01:00', verdict: 2, IP: { source: '10.0.0.1', ipVersion: 'IPv4' }, l4: { TCP: { sourcePort: 80, flags: { SYN: true } } },
    isReply: true, trafficDirection: 'EGRESS', dropReasonDesc: 133, no_such: 1, event_type: { type: 1 }, sourceNames: ['a.example.'], interface: { index: 3, name: 'eth0' },
  });
  assert.deepEqual(back, {
    time: { seconds: Date.UTC(2026, 10, 29, 6) / 1000, nanos: 500_000_000 }, verdict: 'DROPPED', IP: { source: '10.0.0.1', ipVersion: 'IPv4' },
    l4: { TCP: { source_port: 80, flags: { SYN: true } } }, is_reply: { value: true }, traffic_direction: 'EGRESS',
    drop_reason_desc: 'POLICY_DENIED', event_type: { type: 1 }, source_names: ['a.example.'], interface: { index: 3, name: 'eth0' }, no_such: 1,
  });
  // What no reader of these objects looks at: the JSON writer and the filters pass it over.
  assert.equal(json.flow(back)['no_such'], undefined);
  assert.throws(() => reader.flow({ time: 'yesterday' }), /time: not an RFC 3339 time/);
  assert.throws(() => reader.flow({ IP: 'x' }), /IP: not an object/);
  assert.throws(() => reader.flow({ source: { labels: 'k8s:a=b' } }), /labels: not a list/);
  assert.throws(() => reader.flow({ l4: { TCP: { source_port: 'eighty' } } }), /source_port: not a number/);
});

test('RFC 3339: 0 to 9 fraction digits, Z or an offset; anything else is not a time', () => {
  assert.deepEqual(parseRfc3339('2023-11-14T22:13:20Z'), { seconds: 1700000000, nanos: 0 });
  assert.deepEqual(parseRfc3339('2023-11-14T22:13:20.1Z'), { seconds: 1700000000, nanos: 100_000_000 });
  assert.deepEqual(parseRfc3339('2023-11-14T22:13:20.000000005Z'), { seconds: 1700000000, nanos: 5 });
  assert.deepEqual(parseRfc3339('2023-11-14T23:13:20.123+01:00'), { seconds: 1700000000, nanos: 123_000_000 });
  assert.deepEqual(parseRfc3339('2023-11-14T21:43:20-00:30'), { seconds: 1700000000, nanos: 0 });
  for (const bad of ['', '2023-11-14', '2023-11-14T22:13:20', '2023-11-14T22:13:20.Z', '2023-11-14T22:13:20.1234567891Z', '2023-11-14 22:13:20Z', '2023-11-14T22:13:20+1']) {
    assert.equal(parseRfc3339(bad), undefined, bad);
  }
});
