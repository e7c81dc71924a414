/**
 * flow.proto is the one source of the Hubble enums: the flow filter resolves names with the values
 * proto.ts reads from it (no copy in the filter), and the names toHubbleFlow writes must be the
 * proto's too. A copy of an enum coming back, or a proto edit that changes Hubble's wire values,
 * fails here.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';
import { createFlow, type ObservationPoint, type TrafficDirection, type Verdict } from '../../flow/index.js';
import { compileFlowFilters, FilterError, FLOW_PROTO_FILES, hubbleProtoFiles, loadFlowProtos } from '../../flow/hubble/index.js';
import { toHubbleFlow } from '../../flow/hubble/index.js';
import { loadFlowEnums, loadHubbleProtos, PROTO_OPTIONS } from './proto.js';

const DIR = fileURLToPath(new URL('../../../../proto/hubble', import.meta.url));
const enums = loadFlowEnums(DIR);
const names = (m: ReadonlyMap<string, number>): string[] => [...m.keys()];
/** All values of a flow.proto enum, read with proto-loader as the server does. */
function protoEnum(name: string): Map<string, number> {
  const def = protoLoader.loadSync(join(DIR, 'flow.proto'), { ...PROTO_OPTIONS, includeDirs: [DIR] });
  const e = def[`flow.${name}`] as { type: { value: { name: string; number: number }[] } };
  return new Map(e.type.value.map((v) => [v.name, v.number]));
}

describe('Hubble enums from flow.proto', () => {
  it("are Hubble's wire values (cilium api/v1/flow/flow.proto)", () => {
    assert.deepEqual([...enums.verdict], [['VERDICT_UNKNOWN', 0], ['FORWARDED', 1], ['DROPPED', 2], ['ERROR', 3], ['AUDIT', 4], ['REDIRECTED', 5], ['TRACED', 6], ['TRANSLATED', 7]]);
    assert.deepEqual([...enums.trafficDirection], [['TRAFFIC_DIRECTION_UNKNOWN', 0], ['INGRESS', 1], ['EGRESS', 2]]);
    assert.deepEqual([...enums.ipVersion], [['IP_NOT_USED', 0], ['IPv4', 1], ['IPv6', 2]]);
    assert.equal(enums.dropReason.size, 76);
    for (const [n, v] of [['DROP_REASON_UNKNOWN', 0], ['INVALID_SOURCE_MAC', 130], ['POLICY_DENIED', 133], ['SERVICE_BACKEND_NOT_FOUND', 158],
      ['NO_TUNNEL_OR_ENCAPSULATION_ENDPOINT', 160], ['POLICY_DENY', 181], ['DROP_PUNT_PROXY', 205]] as const) {
      assert.equal(enums.dropReason.get(n), v, n);
    }
    assert.equal(enums.dropReason.has('NO_REASON_159'), false);
  });

  it('the server hands the filter the same enums', () => {
    assert.deepEqual(loadHubbleProtos(DIR).enums, enums);
  });

  it('the Hubble server and the flow-log export share one parse of the protos (hubbleProtoFiles), lazily', () => {
    const files = hubbleProtoFiles(DIR);
    let asked = 0;
    const counted = { dir: files.dir, definition: () => (asked++, files.definition()) };
    const first = files.definition();
    const server = loadHubbleProtos(counted);
    const exportProtos = loadFlowProtos(counted);
    assert.equal(asked, 2);
    assert.equal(files.definition(), first, 'the same package definition every time: parsed once');
    // The shared definition serves both as their own loads did.
    assert.deepEqual(server.enums, enums);
    assert.deepEqual(exportProtos.enums, enums);
    const alone = loadFlowProtos(DIR);
    const flow = toHubbleFlow(createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 6, srcPort: 1, dstPort: 2, timeMs: 1_700_000_000_123 }), 'n');
    assert.deepEqual(exportProtos.json.flow(flow), alone.json.flow(flow));
    // Without the Hubble server, flow.proto alone serves the export (and the server refuses it, saying why).
    const flowOnly = hubbleProtoFiles(DIR, FLOW_PROTO_FILES);
    assert.deepEqual(loadFlowProtos(flowOnly).json.flow(flow), alone.json.flow(flow));
    assert.throws(() => loadHubbleProtos(flowOnly), /no Observer service/);
    // Nothing is read before the first ask.
    const missing = hubbleProtoFiles(join(DIR, 'no-such-folder'));
    assert.throws(() => missing.definition());
  });

  it("the filter accepts exactly the proto's names for the closed enums (and any upper-case drop reason)", () => {
    const fields = { verdict: enums.verdict, traffic_direction: enums.trafficDirection, ip_version: enums.ipVersion, drop_reason_desc: enums.dropReason };
    for (const [field, table] of Object.entries(fields)) {
      for (const n of names(table)) compileFlowFilters([{ [field]: [n] }], [], enums);
      assert.throws(() => compileFlowFilters([{ [field]: ['not_a_value'] }], [], enums), FilterError, field);
    }
    // With another proto's enums, the filter follows that proto: nothing in the filter is a copy.
    const other = { ...enums, verdict: new Map([...enums.verdict, ['NEW_VERDICT', 8]]) };
    const m = compileFlowFilters([{ verdict: ['NEW_VERDICT'] }], [], other);
    assert.equal(m.match({ verdict: 'NEW_VERDICT' }), true);
    assert.equal(m.match({ verdict: 8 }), true);
    assert.throws(() => compileFlowFilters([{ verdict: ['NEW_VERDICT'] }], [], enums), FilterError);
    // a number and its name are the same value
    assert.equal(compileFlowFilters([{ drop_reason_desc: ['POLICY_DENIED'] }], [], enums).match({ verdict: 2, drop_reason_desc: 133 }), true);
  });

  it('toHubbleFlow writes only names flow.proto has', () => {
    const points = protoEnum('TraceObservationPoint');
    const types = protoEnum('FlowType');
    const verdicts: Verdict[] = ['FORWARDED', 'DROPPED', 'RETRANSMISSION', 'DNS'];
    const dirs: TrafficDirection[] = ['INGRESS', 'EGRESS', 'UNKNOWN'];
    const obs: ObservationPoint[] = ['FROM_ENDPOINT', 'TO_ENDPOINT', 'FROM_NETWORK', 'TO_NETWORK', 'TO_STACK', 'UNKNOWN'];
    for (const verdict of verdicts) {
      for (const [i, direction] of dirs.entries()) {
        for (const [ip, [src, dst]] of [['v4', ['10.0.0.1', '10.0.0.2']], ['v6', ['fd00::1', 'fd00::2']]] as const) {
          const h = toHubbleFlow(createFlow({ srcIp: src, dstIp: dst, verdict, direction, observationPoint: obs[i % obs.length]!, proto: 6, srcPort: 1, dstPort: 2 }), 'n');
          const what = `${verdict} ${direction} ${ip}`;
          assert.ok(enums.verdict.has(h['verdict'] as string), what);
          assert.ok(enums.ipVersion.has((h['IP'] as { ipVersion: string }).ipVersion), what);
          assert.ok(types.has(h['Type'] as string), what);
          if (h['traffic_direction'] !== undefined) assert.ok(enums.trafficDirection.has(h['traffic_direction'] as string), what);
          if (h['trace_observation_point'] !== undefined) assert.ok(points.has(h['trace_observation_point'] as string), what);
        }
      }
    }
    for (const p of obs) {
      const h = toHubbleFlow(createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', observationPoint: p }), 'n');
      if (p !== 'UNKNOWN') assert.ok(points.has(h['trace_observation_point'] as string), p);
    }
  });
});
