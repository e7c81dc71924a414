/**
 * The hand-written protobuf encoder (wire.ts) against protobufjs (@grpc/proto-loader over the
 * OpenTelemetry protos) as the oracle: the same bytes as protobufjs's encoding of toProtoRequest
 * (test/export/otlp-proto-request.ts), and a request protobufjs decodes back to the records, for
 * ASCII and non-ASCII strings (short and long), negative, zero and large ints, an empty version, no
 * records and many.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';
import { toProtoRequest } from '../../../test/export/otlp-proto-request.js';
import { SCOPE_NAME, type OtlpLogRecord, type OtlpResourceInfo } from './encode.js';
import { loadExportCodec } from './transport.js';
import { encodeLogsRequest } from './wire.js';

const PROTO_DIR = fileURLToPath(new URL('../../../../proto', import.meta.url));
const codec = loadExportCodec(PROTO_DIR);

function records(n: number): OtlpLogRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    timeUnixNano: i === 0 ? '0' : i === 1 ? '18446744073709551615' : String(1764151201123456789n + BigInt(i) * 1_000_003n),
    observedTimeUnixNano: '1764151201999999999',
    body: i % 4 === 0 ? `{"flow":{"pod":"naïve-${i}","x":"${'y'.repeat(i * 7)}"}}` : i % 4 === 1 ? `{"emoji":"🚀${i}"}` : `{"i":${i},"long":"${'z'.repeat(300)}"}`,
    attributes: [
      ['hubble.verdict', i % 2 ? 'FORWARDED' : 'DROPPED'],
      ['source.k8s.pod.name', i % 3 === 0 ? `pöd-${i}` : `pod-${'p'.repeat(i % 90)}`],
      ['source.port', i === 2 ? -1 : i === 3 ? 0 : i === 4 ? Number.MAX_SAFE_INTEGER : 30000 + i],
      ['destination.port', 127 + (i % 3)],
      ['empty', ''],
    ],
  }));
}

const resources: OtlpResourceInfo[] = [
  { nodeName: 'node-a', serviceName: 'retina-agent', serviceVersion: '1.2.3' },
  { nodeName: '', serviceName: 'retina-agent', serviceVersion: '' },
  { nodeName: 'nœud-é', serviceName: 'retina-agent', serviceVersion: 'v'.repeat(200) },
];

test('wire.ts writes the bytes protobufjs writes for the same request', () => {
  for (const res of resources) {
    for (const n of [0, 1, 5, 64, 300]) {
      const recs = records(n);
      const want = codec.serialize(toProtoRequest(recs, res));
      const got = encodeLogsRequest(recs, res, SCOPE_NAME);
      assert.equal(got.length, want.length, `${n} records, resource ${JSON.stringify(res).slice(0, 60)}: length`);
      assert.ok(got.equals(want), `${n} records: the same bytes`);
    }
  }
});

test('protobufjs decodes the request back to the records (time as fixed64, ints as int64, strings as UTF-8)', () => {
  const def = protoLoader.loadSync('opentelemetry/proto/collector/logs/v1/logs_service.proto', { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true, includeDirs: [PROTO_DIR] });
  const svc = def['opentelemetry.proto.collector.logs.v1.LogsService'] as protoLoader.ServiceDefinition;
  const recs = records(40);
  const res = resources[2] as OtlpResourceInfo;
  const req = svc['Export']!.requestDeserialize(encodeLogsRequest(recs, res, SCOPE_NAME)) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  const rl = req.resource_logs[0];
  assert.deepEqual(rl.resource.attributes.map((a: any) => [a.key, a.value.string_value]), [ // eslint-disable-line @typescript-eslint/no-explicit-any
    ['service.name', 'retina-agent'], ['service.version', res.serviceVersion], ['k8s.node.name', 'nœud-é']]);
  assert.deepEqual(rl.scope_logs[0].scope, { name: SCOPE_NAME, version: res.serviceVersion });
  const got = rl.scope_logs[0].log_records;
  assert.equal(got.length, recs.length);
  recs.forEach((r, i) => {
    assert.equal(got[i].time_unix_nano, r.timeUnixNano, `time of ${i}`);
    assert.equal(got[i].observed_time_unix_nano, r.observedTimeUnixNano);
    assert.equal(got[i].body.string_value, r.body);
    assert.deepEqual(got[i].attributes.map((a: any) => [a.key, a.value.string_value ?? Number(a.value.int_value)]), r.attributes); // eslint-disable-line @typescript-eslint/no-explicit-any
  });
});
