/**
 * The OTLP flow-log sink (issue 28): flows as OTLP log records to an OpenTelemetry collector over
 * OTLP/gRPC or OTLP/HTTP (protobuf or JSON), TLS, auth headers, batching, retry with backoff and a
 * bounded queue that drops and counts. src/export/setup.ts imports this module only when
 * `flowLogs.otlp.endpoint` is set (`await import(...)`), so gRPC's client and the OTLP protos cost
 * nothing otherwise. Encoding: encode.ts; transports: transport.ts; queue and retry: sink.ts.
 */
import type { FlowLogsOtlpConfig } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { MetricsRegistry } from '../../metrics/index.js';
import { sinkCounts, type SinkCounts } from '../counts.js';
import { createOtlpSink, type OtlpSink } from './sink.js';
import { grpcTransport, httpTransport, loadExportCodec } from './transport.js';

export { createOtlpSink, type OtlpSink, type OtlpSinkOptions } from './sink.js';
export type { SinkCounts } from '../counts.js';
export { grpcTransport, httpTransport, loadExportCodec, httpLogsUrl, parseRetryAfter, retryInfoDelayMs, type SendResult, type Transport } from './transport.js';
export { encodeLogsRequest } from './wire.js';
export { toLogRecord, toJsonRequest, flowAttributes, rfc3339ToUnixNano, SCOPE_NAME, type OtlpLogRecord, type OtlpResourceInfo } from './encode.js';

export interface OtlpFlowSinkOptions {
  readonly config: FlowLogsOtlpConfig;
  readonly nodeName: string;
  readonly version: string;
  /** The package's proto/ directory (holds opentelemetry/proto/...). */
  readonly protoDir: string;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
  /** Passed to the sink (tests): the retry backoff, the give-up time, disposal's time. */
  readonly tuning?: Pick<Parameters<typeof createOtlpSink>[0], 'backoff' | 'maxElapsedMs' | 'closeTimeoutMs' | 'maxRetryAfterMs'>;
}

/** flow_log_records_total{sink="otlp"}. */
export function otlpCounts(metrics: MetricsRegistry): SinkCounts {
  return sinkCounts(metrics, 'otlp');
}

/** The sink for `flowLogs.otlp.*`; throws (naming the file) when a TLS file cannot be read. */
export function createOtlpFlowSink(o: OtlpFlowSinkOptions): OtlpSink {
  const c = o.config;
  const log = o.log.child({ component: 'flow-log-otlp' });
  const transportOptions = {
    config: c,
    resource: { nodeName: o.nodeName, serviceName: 'retina-agent', serviceVersion: o.version },
    codec: loadExportCodec(o.protoDir),
    userAgent: `retina-ts/${o.version}`,
  };
  const transport = c.protocol === 'grpc' ? grpcTransport(transportOptions) : httpTransport(transportOptions);
  log.info('flow logs go to an OTLP collector', { endpoint: c.endpoint, protocol: c.protocol, queueSize: c.queueSize, batchSize: c.batchSize });
  return createOtlpSink({
    transport, counts: otlpCounts(o.metrics), log,
    queueSize: c.queueSize, batchSize: c.batchSize, flushIntervalMs: c.flushIntervalMs,
    ...o.tuning,
  });
}
