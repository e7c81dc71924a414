/**
 * The flow-log exporters the config asks for, built once by src/cli and handed to the node pipeline
 * as consumers: hubble.export.static (fixed allow/deny lists), hubble.export.dynamic (the flowlogs.yaml
 * file, dynamic.ts) and flowLogs (the ContainerNetworkLog selection, handed in by src/cli). A
 * misconfigured exporter (a filter or field mask that does not compile) is logged with the key and
 * field and left out; the others, and the agent, run.
 */
import type { FlowLogsConfig, StaticExportConfig } from '../config/index.js';
import type { FlowConsumer } from '../flow/index.js';
import type { FieldMask } from '../flow/hubble/index.js';
import { errorFields, type Logger } from '../log/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import { checkExportFilters, ExportConfigError, fileSinkFor } from './check.js';
import { startDynamicExporters } from './dynamic.js';
import { createFlowExporter, type ExportProtos, type FlowExporter } from './exporter.js';
import { staticSelection } from './selection.js';
import type { FlowLogSink, FlowSelection } from './types.js';

export interface FlowLogsOptions {
  readonly config: FlowLogsConfig;
  readonly nodeName: string;
  readonly protos: ExportProtos;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
  /**
   * The ContainerNetworkLog selection (src/export/cnl.ts, watched through the pipeline's informer
   * factory), for `flowLogs.enabled`; undefined leaves that exporter out.
   */
  readonly containerNetworkLogs?: FlowSelection | undefined;
  /** Extra sinks of the ContainerNetworkLog exporter beside its file (the OTLP sink). */
  readonly extraSinks?: readonly FlowLogSink[];
}

/** Disposing it writes out what the exporters hold and releases their files, sockets and timers. */
export interface FlowLogs extends AsyncDisposable {
  /** Consumers for startNodePipeline, one per exporter that runs. */
  readonly consumers: readonly { readonly name: string; readonly consumer: FlowConsumer }[];
}

function staticExporter(s: StaticExportConfig, o: FlowLogsOptions, log: Logger): FlowExporter | undefined {
  let mask: FieldMask | undefined;
  try {
    mask = checkExportFilters(o.protos, s.allowList, s.denyList, s.fieldMask, { allow: s.keys.allowList, deny: s.keys.denyList, mask: s.keys.fieldMask });
  } catch (e) {
    if (!(e instanceof ExportConfigError)) throw e;
    log.error('hubble.export.static is not started: bad configuration', { field: e.field, error: e.message });
    return undefined;
  }
  log.info('flow-log export: hubble.export.static', { path: s.file.path, allow: s.allowList.length, deny: s.denyList.length, fieldMask: s.fieldMask, aggregationIntervalMs: s.aggregationIntervalMs });
  return createFlowExporter({
    name: 'static', selection: staticSelection(s.allowList, s.denyList), fieldMask: mask,
    aggregation: s.aggregationIntervalMs > 0 ? { intervalMs: s.aggregationIntervalMs, maxKeys: o.config.aggregationMaxKeys } : undefined,
    sinks: [fileSinkFor(s.file, o.metrics, o.log)], nodeName: o.nodeName, protos: o.protos, metrics: o.metrics, log: o.log,
  });
}

export function startFlowLogs(o: FlowLogsOptions): FlowLogs {
  const log = o.log.child({ component: 'flow-log' });
  const consumers: { name: string; consumer: FlowConsumer }[] = [];
  const closers: (() => PromiseLike<void>)[] = [];
  try {
    if (o.config.static) {
      const exp = staticExporter(o.config.static, o, log);
      if (exp) {
        consumers.push({ name: 'flow_log_static', consumer: exp });
        closers.push(() => exp[Symbol.asyncDispose]());
      }
    }
    if (o.config.dynamic) {
      const dyn = startDynamicExporters({ path: o.config.dynamic.configFilePath, defaults: o.config.dynamic.defaults, aggregationMaxKeys: o.config.aggregationMaxKeys, nodeName: o.nodeName, protos: o.protos, metrics: o.metrics, log: o.log });
      consumers.push({ name: 'flow_log_dynamic', consumer: dyn });
      closers.push(() => dyn[Symbol.asyncDispose]());
    }
    const cnl = o.config.cnl;
    if (cnl && o.containerNetworkLogs) {
      log.info('flow-log export: ContainerNetworkLog resources', { path: cnl.file.path, aggregation: cnl.aggregation ?? false });
      const exp = createFlowExporter({
        name: 'containernetworklog', selection: o.containerNetworkLogs, aggregation: cnl.aggregation,
        sinks: [fileSinkFor(cnl.file, o.metrics, o.log), ...(o.extraSinks ?? [])], nodeName: o.nodeName, protos: o.protos, metrics: o.metrics, log: o.log,
      });
      consumers.push({ name: 'flow_log_containernetworklog', consumer: exp });
      closers.push(() => exp[Symbol.asyncDispose]());
    } else if (cnl) {
      log.error('flowLogs.enabled is true but there is no ContainerNetworkLog selection (no Kubernetes API): the container network logs exporter is not started');
    }
  } catch (e) {
    log.error('flow-log export failed to start', { error: errorFields(e as Error) });
  }
  return {
    consumers,
    async [Symbol.asyncDispose]() {
      await Promise.allSettled(closers.map((c) => c()));
    },
  };
}
