export { ConfigError, ConfigErrors, InvalidValue, type ConfigSource } from './errors.js';
export { DURATION_PATTERN, MAX_DURATION_MS, boolKey, durationKey, enumKey, intKey, listKey, stringKey, envName, type ConfigSpec, type JsonSchema, type KeySpec } from './schema.js';
export { parseDurationMs, formatDurationMs } from './duration.js';
export { collectSpecs, loadValues, pick, readConfigFile, type LoadedValues, type LoadOptions, type UnknownKey } from './load.js';
export { configWarnings, type ConfigWarning, type ConsistencyInput } from './consistency.js';
export { agentKeys, agentConfig, flowsWanted, flowLogsWanted, type AgentConfig, type AgentKeys, type PluginChoice } from './agent.js';
export { closestMatch, didYouMean, editDistance } from './suggest.js';
export { metricsSecurityConfig, metricsSecurityKeys, type MetricsSecurityConfig, type MetricsSecurityKeys } from './metrics-security.js';
export { hubbleConfig, hubbleKeys, parseListenAddress, type HubbleConfig, type HubbleKeys } from './hubble.js';
export {
  hubbleMetricsConfig, hubbleMetricsKeys, parseHubbleMetric, parseHubbleMetrics, podLabelName, CONTEXT_IDENTIFIERS, CONTEXT_LABELS, HUBBLE_METRICS, MAX_POD_LABEL_KEYS, UNSUPPORTED_HUBBLE_METRICS,
  type ContextIdentifier, type HubbleContextLabel, type HubbleMetricName, type HubbleMetricSpec, type HubbleMetricsConfig, type HubbleMetricsKeys, type RefusedEntry,
} from './hubble-metrics.js';
export { Backoff, backoffDelay, type BackoffOptions } from './backoff.js';
export { flowLogsConfig, flowLogsKeys, filterListKey, fieldMaskKey, splitJsonObjects, ACNS_LINUX_PATH, WINDOWS_FLOW_LOG_PATH, STATIC_EXPORT_PATH, DYNAMIC_CONFIG_PATH, type ExportFileConfig, type FilterObject, type FlowLogsConfig, type FlowLogsKeys, type StaticExportConfig } from './flow-logs.js';
export { flowLogsOtlpConfig, flowLogsOtlpKeys, parseHeaders, parseOtlpEndpoint, OTLP_PROTOCOLS, type FlowLogsOtlpConfig, type FlowLogsOtlpKeys, type OtlpProtocol } from './flowlogs-otlp.js';
