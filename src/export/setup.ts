/**
 * Every flow-log exporter the config asks for, wired here and nowhere else; src/cli loads this area
 * only when one is configured (flowLogsWanted) and hands the consumers to the node pipeline:
 *
 *   hubble.export.static   fixed allow/deny lists, a file
 *   hubble.export.dynamic  the flowlogs.yaml file followed at run time (dynamic.ts), a file each
 *   flowLogs.*             the ContainerNetworkLog selection (cnl.ts), read through the node's one
 *                          informer factory (handed in), a file and, with flowLogs.otlp.endpoint, an
 *                          OTLP collector (otlp/, loaded only then)
 *
 * A misconfigured exporter (a filter or field mask that does not compile) is logged with the key and
 * field and left out; the others, and the agent, run. An OTLP TLS file that cannot be read stops the
 * start (it throws, naming the file), before anything here has started.
 */
import type { FlowLogsConfig, FlowLogsOtlpConfig, StaticExportConfig } from '../config/index.js';
import type { FlowConsumer } from '../flow/index.js';
import { loadFlowProtos, type FieldMask, type HubbleProtoFiles } from '../flow/hubble/index.js';
import type { InformerFactory } from '../k8s/index.js';
import { errorFields, type Logger } from '../log/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import { checkExportFilters, ExportConfigError, fileSinkFor } from './check.js';
import { createContainerNetworkLogSelection, type ContainerNetworkLogSelection } from './cnl.js';
import { startDynamicExporters } from './dynamic.js';
import { createFlowExporter, type ExportProtos, type FlowExporter } from './exporter.js';
import { staticSelection } from './selection.js';
import type { FlowLogSink } from './types.js';

export interface FlowLogsOptions {
  readonly config: FlowLogsConfig;
  /** flowLogs.otlp.*: with an endpoint, the ContainerNetworkLog exporter's records also go to an OTLP collector. */
  readonly otlp: FlowLogsOtlpConfig;
  readonly nodeName: string;
  /** The agent's version (the OTLP resource and user agent). */
  readonly version: string;
  /** Hubble's .proto files, parsed once and shared with the Hubble server (src/flow/hubble's hubbleProtoFiles). */
  readonly protoFiles: HubbleProtoFiles;
  /** The package's proto/ folder (the OTLP protos, read only with an OTLP endpoint). */
  readonly protoDir: string;
  /** The node's one informer factory (src/pipeline's watches); undefined without Kubernetes, which leaves the ContainerNetworkLog exporter out. */
  readonly informers: InformerFactory | undefined;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
}

/** Disposing it stops reading ContainerNetworkLogs, then writes out what is queued (after the plugins stopped). */
export interface FlowLogs extends AsyncDisposable {
  /** Consumers for startNodePipeline, one per exporter that runs. */
  readonly consumers: readonly { readonly name: string; readonly consumer: FlowConsumer }[];
}

function staticExporter(s: StaticExportConfig, o: FlowLogsOptions, protos: ExportProtos, log: Logger): FlowExporter | undefined {
  let mask: FieldMask | undefined;
  try {
    mask = checkExportFilters(protos, s.allowList, s.denyList, s.fieldMask, { allow: s.keys.allowList, deny: s.keys.denyList, mask: s.keys.fieldMask });
  } catch (e) {
    if (!(e instanceof ExportConfigError)) throw e;
    log.error('hubble.export.static is not started: bad configuration', { field: e.field, error: e.message });
    return undefined;
  }
  log.info('flow-log export: hubble.export.static', { path: s.file.path, allow: s.allowList.length, deny: s.denyList.length, fieldMask: s.fieldMask, aggregationIntervalMs: s.aggregationIntervalMs });
  return createFlowExporter({
    name: 'static', selection: staticSelection(s.allowList, s.denyList), fieldMask: mask,
    aggregation: s.aggregationIntervalMs > 0 ? { intervalMs: s.aggregationIntervalMs, maxKeys: o.config.aggregationMaxKeys } : undefined,
    sinks: [fileSinkFor(s.file, o.metrics, o.log)], nodeName: o.nodeName, protos, metrics: o.metrics, log: o.log,
  });
}

/** The OTLP sink of flowLogs.otlp.* (src/export/otlp, loaded only now); throws when a TLS file cannot be read. */
async function otlpSink(o: FlowLogsOptions): Promise<FlowLogSink> {
  const { createOtlpFlowSink } = await import('./otlp/index.js');
  return createOtlpFlowSink({ config: o.otlp, nodeName: o.nodeName, version: o.version, protoDir: o.protoDir, metrics: o.metrics, log: o.log });
}

export async function startFlowLogs(o: FlowLogsOptions): Promise<FlowLogs> {
  const log = o.log.child({ component: 'flow-log' });
  const protos = loadFlowProtos(o.protoFiles);
  const cnl = o.config.cnl;
  const otlp = cnl && o.informers && o.otlp.endpoint !== '' ? await otlpSink(o) : undefined;
  const consumers: { name: string; consumer: FlowConsumer }[] = [];
  const exporters: FlowExporter[] = [];
  const add = (name: string, exp: FlowExporter): void => {
    consumers.push({ name, consumer: exp });
    exporters.push(exp);
  };
  let selection: ContainerNetworkLogSelection | undefined;
  // Its exporter's to release once handed over; until then (a start that failed before) it is ours.
  let otlpHeld = otlp;
  try {
    const exp = o.config.static ? staticExporter(o.config.static, o, protos, log) : undefined;
    if (exp) add('flow_log_static', exp);
    if (o.config.dynamic) {
      add('flow_log_dynamic', startDynamicExporters({
        path: o.config.dynamic.configFilePath, defaults: o.config.dynamic.defaults, aggregationMaxKeys: o.config.aggregationMaxKeys, nodeName: o.nodeName, protos, metrics: o.metrics, log: o.log,
      }));
    }
    if (cnl && o.informers) {
      log.info('flow-log export: ContainerNetworkLog resources', { path: cnl.file.path, aggregation: cnl.aggregation ?? false });
      selection = createContainerNetworkLogSelection({ log: o.log, enums: protos.enums });
      add('flow_log_containernetworklog', createFlowExporter({
        name: 'containernetworklog', selection, aggregation: cnl.aggregation,
        sinks: [fileSinkFor(cnl.file, o.metrics, o.log), ...(otlp ? [otlp] : [])], nodeName: o.nodeName, protos, metrics: o.metrics, log: o.log,
      }));
      otlpHeld = undefined;
      // ContainerNetworkLogs are read through the node's one informer factory (one more watch, counted).
      selection.watch(o.informers);
    } else if (cnl) {
      log.error('flowLogs.enabled is true but there is no ContainerNetworkLog selection (no Kubernetes API): the container network logs exporter is not started');
    }
  } catch (e) {
    log.error('flow-log export failed to start', { error: errorFields(e as Error) });
  }
  return {
    consumers,
    async [Symbol.asyncDispose]() {
      selection?.[Symbol.dispose]();
      await Promise.allSettled([...exporters, ...(otlpHeld ? [otlpHeld] : [])].map((x) => x[Symbol.asyncDispose]()));
    },
  };
}
