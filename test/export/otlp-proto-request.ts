/**
 * The oracle of the hand-written OTLP protobuf encoder (src/export/otlp/wire.ts): the same
 * ExportLogsServiceRequest as a @grpc/proto-loader (keepCase) object, for protobufjs to encode
 * (wire.test.ts compares the bytes; bench/export/otlp.bench.ts times both). Written from the OTLP
 * protos, not from wire.ts: the resource's attributes are service.name, service.version and
 * k8s.node.name (the empty ones left out), the scope is SCOPE_NAME with the service version.
 */
import { SCOPE_NAME, type AttrValue, type OtlpLogRecord, type OtlpResourceInfo } from '../../src/export/otlp/encode.js';

/** proto-loader objects (keepCase): oneof members by their field name. */
function protoKv([key, v]: readonly [string, AttrValue]): object {
  return { key, value: typeof v === 'number' ? { int_value: v } : { string_value: v } };
}

export function toProtoRequest(records: readonly OtlpLogRecord[], res: OtlpResourceInfo): object {
  const resource: [string, AttrValue][] = [['service.name', res.serviceName]];
  if (res.serviceVersion) resource.push(['service.version', res.serviceVersion]);
  if (res.nodeName) resource.push(['k8s.node.name', res.nodeName]);
  return {
    resource_logs: [{
      resource: { attributes: resource.map(protoKv) },
      scope_logs: [{
        scope: { name: SCOPE_NAME, version: res.serviceVersion },
        log_records: records.map((r) => ({
          time_unix_nano: r.timeUnixNano,
          observed_time_unix_nano: r.observedTimeUnixNano,
          body: { string_value: r.body },
          attributes: r.attributes.map(protoKv),
        })),
      }],
    }],
  };
}
