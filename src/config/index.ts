export { ConfigError, ConfigErrors, InvalidValue, type ConfigSource } from './errors.js';
export { DURATION_PATTERN, MAX_DURATION_MS, boolKey, durationKey, enumKey, intKey, listKey, stringKey, envName, type ConfigSpec, type JsonSchema, type KeySpec } from './schema.js';
export { parseDurationMs, formatDurationMs } from './duration.js';
export { collectSpecs, loadValues, pick, readConfigFile, type LoadedValues, type LoadOptions, type UnknownKey } from './load.js';
export { configWarnings, type ConfigWarning, type ConsistencyInput } from './consistency.js';
export { agentKeys, agentConfig, flowsWanted, type AgentConfig, type AgentKeys, type PluginChoice } from './agent.js';
export { closestMatch, didYouMean, editDistance } from './suggest.js';
export { metricsSecurityConfig, metricsSecurityKeys, type MetricsSecurityConfig, type MetricsSecurityKeys } from './metrics-security.js';
export { hubbleConfig, hubbleKeys, parseListenAddress, type HubbleConfig, type HubbleKeys } from './hubble.js';
