/**
 * The agent's own keys (Retina's names and defaults). Plugin-specific keys are declared by the plugins;
 * keys read by several components (the pod-level pipeline's) live here.
 */
import { DURATION_PATTERN, MAX_DURATION_MS, boolKey, cpuKey, durationKey, enumKey, intKey, listKey, stringKey, type ConfigSpec, type KeySpec } from './schema.js';
import { LOG_LEVELS, type LogLevel } from '../log/line/index.js';
import { formatDurationMs, parseDurationMs } from './duration.js';
import { ConfigErrors, InvalidValue } from './errors.js';
import type { LoadedValues } from './load.js';
import { historyProblems, hubbleConfig, hubbleKeys, type HubbleConfig } from './hubble.js';
import { flowLogsConfig, flowLogsKeys, type FlowLogsConfig } from './flow-logs.js';
import { flowLogsOtlpConfig, flowLogsOtlpKeys, type FlowLogsOtlpConfig } from './flowlogs-otlp.js';
import { metricsSecurityConfig, metricsSecurityKeys, type MetricsSecurityConfig } from './metrics-security.js';
import { hubbleMetricsConfig, hubbleMetricsKeys, type HubbleMetricsConfig } from './hubble-metrics.js';

export interface AgentConfig {
  readonly apiServerHost: string;
  readonly apiServerPort: number;
  readonly logLevel: LogLevel;
  readonly enabledPlugin: readonly string[];
  readonly metricsIntervalMs: number;
  readonly enablePodLevel: boolean;
  readonly remoteContext: boolean;
  /** Remote context: watch RetinaEndpointSlices instead of RetinaEndpoints. */
  readonly retinaEndpointSlices: boolean;
  readonly enableAnnotations: boolean;
  readonly bypassLookupIPOfInterest: boolean;
  readonly dataAggregationLevel: 'low' | 'high';
  readonly dataSamplingRate: number;
  readonly conntrackReportIntervalMs: number;
  readonly enableConntrackMetrics: boolean;
  readonly packetParserRingBufferSize: number;
  readonly filterMapMaxEntries: number;
  /** cpuBudget in millicores (0: off): the agent's CPU the event sources keep under (packetparser folds records in the kernel). */
  readonly cpuBudgetMillicores: number;
  readonly pluginStartTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  /** Worker threads that decode, enrich and count raw flow records (0: on the main thread; 'auto': by cores). */
  readonly pipelineWorkers: number | 'auto';
  /** TLS and Kubernetes auth of the HTTP server's /metrics (off by default). */
  readonly metricsSecurity: MetricsSecurityConfig;
  /** The Hubble gRPC service (off by default). */
  readonly hubble: HubbleConfig;
  /** Cilium's hubble_* metrics (hubble.metrics.enabled; off while it names none). */
  readonly hubbleMetrics: HubbleMetricsConfig;
  /** Pod label keys added to adv_* and hubble_* series (metricsPodLabelsAllowlist). */
  readonly metricsPodLabels: readonly string[];
  /** Stored flow logs: hubble.export (static, dynamic) and flowLogs (ContainerNetworkLog); each off by default. */
  readonly flowLogs: FlowLogsConfig;
  /** Flow logs to an OpenTelemetry collector (off while its endpoint is ''). */
  readonly flowLogsOtlp: FlowLogsOtlpConfig;
}

/** What the platform layer knows when the keys are built: this OS's plugins. */
export interface PluginChoice {
  readonly os: string;
  readonly names: readonly string[];
  readonly defaults: readonly string[];
}

/** Retina's `metricsInterval` (deprecated): an integer of seconds, or a duration. */
/** `pipelineWorkers`: a count of worker threads, or `auto`. */
export const MAX_PIPELINE_WORKERS = 64;
const pipelineWorkersKey: KeySpec<number | 'auto'> = {
  key: 'pipelineWorkers', default: 0, defaultText: '0',
  doc: 'Ours: worker threads that decode, enrich and count packetparser records (0: on the main thread; auto: by cores).',
  allowed: `an integer from 0 to ${MAX_PIPELINE_WORKERS}, or auto`,
  schema: { oneOf: [{ type: 'integer', minimum: 0, maximum: MAX_PIPELINE_WORKERS }, { type: 'string', enum: ['auto'] }] },
  parse(raw) {
    const s = typeof raw === 'string' ? raw.trim() : typeof raw === 'number' ? String(raw) : undefined;
    if (s === 'auto') return 'auto';
    if (s === undefined || !/^\d+$/.test(s)) throw new InvalidValue();
    const n = Number(s);
    if (n > MAX_PIPELINE_WORKERS) throw new InvalidValue();
    return n;
  },
};

const legacyMetricsInterval: KeySpec<number> = {
  key: 'metricsInterval', default: 0, defaultText: '(unset)',
  doc: 'Deprecated: used only when metricsIntervalDuration is not set. An integer is seconds, as in Retina.',
  allowed: `a whole number of seconds (>= 1) or a duration such as 10s, at most ${formatDurationMs(MAX_DURATION_MS)}`,
  schema: { oneOf: [{ type: 'integer', minimum: 1 }, { type: 'string', pattern: DURATION_PATTERN }] },
  parse(raw) {
    const s = String(raw).trim();
    const ms = /^\d+$/.test(s) ? Number(s) * 1000 : parseDurationMs(s);
    if (ms === undefined || ms < 1000 || ms > MAX_DURATION_MS) throw new InvalidValue();
    return ms;
  },
};

export function agentKeys(plugins: PluginChoice) {
  return {
    apiServerHost: stringKey('apiServer.host', '0.0.0.0', 'Address the HTTP server (metrics, health) listens on.', { nonEmpty: true }),
    apiServerPort: intKey('apiServer.port', 10093, 'Port of the HTTP server (0: any free port, logged at start).', { min: 0, max: 65535 }),
    logLevel: enumKey<LogLevel>('logLevel', 'info', LOG_LEVELS, 'Log level.'),
    enabledPlugin: listKey('enabledPlugin', plugins.defaults, `Plugins to run (this OS: ${plugins.names.join(', ')}).`, {
      values: plugins.names,
      allowedText: `a list of plugins available on ${plugins.os}: ${plugins.names.join(', ')}`,
    }),
    metricsIntervalDuration: durationKey('metricsIntervalDuration', 10_000, 'How often plugins refresh node metrics.', { minMs: 100 }),
    metricsInterval: legacyMetricsInterval,
    enablePodLevel: boolKey('enablePodLevel', false, 'Pod-level (advanced) metrics: flows, enricher, metrics module.'),
    remoteContext: boolKey('remoteContext', false, 'Label advanced metrics with source_/destination_ context (RetinaEndpoints) instead of local pods.'),
    retinaEndpointSlices: boolKey('retinaEndpointSlices', false, 'Ours: remote context reads RetinaEndpointSlices (up to 20 pods an object; the operator\'s retinaEndpointSlices must be on) instead of one RetinaEndpoint per pod: for big clusters.'),
    enableAnnotations: boolKey('enableAnnotations', false, 'Advanced metrics only for pods/namespaces annotated retina.sh: observe.'),
    bypassLookupIPOfInterest: boolKey('bypassLookupIPOfInterest', false, 'Report every packet instead of only IPs of interest (filter map).'),
    dataAggregationLevel: enumKey<'low' | 'high'>('dataAggregationLevel', 'low', ['low', 'high'], 'low: also watch the host interface; high: pod veths only, aggregated per connection.'),
    dataSamplingRate: intKey('dataSamplingRate', 1, 'Report 1 of N packets (high aggregation).', { min: 1, max: 4_294_967_295 }),
    conntrackReportInterval: durationKey('conntrackReportInterval', 30_000, 'Per-connection report interval.', { minMs: 1000 }),
    enableConntrackMetrics: boolKey('enableConntrackMetrics', false, 'Export conntrack_* gauges.'),
    packetParserRingBufferSize: intKey('packetParserRingBufferSize', 8_388_608, 'Kernel ring buffer size in bytes.', { min: 4096, max: 1 << 30, powerOfTwo: true }),
    filterMapMaxEntries: intKey('filterMapMaxEntries', 255, 'Size of the IPs-of-interest filter map.', { min: 1, max: 1_048_576 }),
    cpuBudget: cpuKey(
      'cpuBudget', 500,
      'Ours: the agent\'s CPU budget (utime + stime, in cores as Kubernetes writes them). Over it, packetparser folds records into in-kernel aggregates (counts stay exact) until the agent is back under it; 0 turns it off.',
      { minMillicores: 50, maxMillicores: 256_000 },
    ),
    pluginStartTimeout: durationKey('pluginStartTimeout', 10_000, 'Ours: how long a plugin may take to start before it counts as failed.', { minMs: 100 }),
    shutdownTimeout: durationKey('shutdownTimeout', 8_000, 'Ours: how long stopping all plugins may take on SIGTERM before the process exits anyway.', { minMs: 100 }),
    pipelineWorkers: pipelineWorkersKey,
    ...metricsSecurityKeys(),
    ...hubbleKeys(),
    ...hubbleMetricsKeys(),
    ...flowLogsKeys(plugins.os),
    ...flowLogsOtlpKeys(),
  } satisfies ConfigSpec<Record<string, unknown>>;
}

export type AgentKeys = ReturnType<typeof agentKeys>;

export function agentConfig(keys: AgentKeys, v: LoadedValues): AgentConfig {
  const useLegacy = v.sourceOf(keys.metricsIntervalDuration.key) === 'default' && v.sourceOf(keys.metricsInterval.key) !== 'default';
  const flowLogs = flowLogsConfig(keys, v);
  const history = historyProblems(keys, v, flowLogs.static);
  if (history.length > 0) throw new ConfigErrors(history);
  return Object.freeze({
    apiServerHost: v.get(keys.apiServerHost),
    apiServerPort: v.get(keys.apiServerPort),
    logLevel: v.get(keys.logLevel),
    enabledPlugin: Object.freeze([...v.get(keys.enabledPlugin)]),
    metricsIntervalMs: useLegacy ? v.get(keys.metricsInterval) : v.get(keys.metricsIntervalDuration),
    enablePodLevel: v.get(keys.enablePodLevel),
    remoteContext: v.get(keys.remoteContext),
    retinaEndpointSlices: v.get(keys.retinaEndpointSlices),
    enableAnnotations: v.get(keys.enableAnnotations),
    bypassLookupIPOfInterest: v.get(keys.bypassLookupIPOfInterest),
    dataAggregationLevel: v.get(keys.dataAggregationLevel),
    dataSamplingRate: v.get(keys.dataSamplingRate),
    conntrackReportIntervalMs: v.get(keys.conntrackReportInterval),
    enableConntrackMetrics: v.get(keys.enableConntrackMetrics),
    packetParserRingBufferSize: v.get(keys.packetParserRingBufferSize),
    filterMapMaxEntries: v.get(keys.filterMapMaxEntries),
    cpuBudgetMillicores: v.get(keys.cpuBudget),
    pluginStartTimeoutMs: v.get(keys.pluginStartTimeout),
    shutdownTimeoutMs: v.get(keys.shutdownTimeout),
    pipelineWorkers: v.get(keys.pipelineWorkers),
    metricsSecurity: metricsSecurityConfig(keys, v),
    hubble: hubbleConfig(keys, v),
    hubbleMetrics: hubbleMetricsConfig(keys, v),
    metricsPodLabels: Object.freeze([...v.get(keys.metricsPodLabelsAllowlist)]),
    flowLogs,
    flowLogsOtlp: flowLogsOtlpConfig(keys, v),
  });
}

/**
 * Whether plugins produce per-packet flows: for the pod-level pipeline, the Hubble ring, or a
 * flow-log exporter (hubble.export static or dynamic, flowLogs). Decided once, by the flow pipeline (src/pipeline/node.ts), which gives
 * plugins a flow sink (PluginContext.flows) only then; the config checks read it for their warnings.
 */
export function flowsWanted(a: Pick<AgentConfig, 'enablePodLevel'> & { readonly hubble?: Pick<HubbleConfig, 'enabled'>; readonly flowLogs?: FlowLogsConfig; readonly hubbleMetrics?: Pick<HubbleMetricsConfig, 'metrics'> }): boolean {
  return a.enablePodLevel || a.hubble?.enabled === true || flowLogsWanted(a.flowLogs) || (a.hubbleMetrics?.metrics.length ?? 0) > 0;
}

/** Whether any flow-log exporter is configured. */
export function flowLogsWanted(f: FlowLogsConfig | undefined): boolean {
  return f !== undefined && (f.static !== undefined || f.dynamic !== undefined || f.cnl !== undefined);
}
