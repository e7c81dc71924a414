/**
 * Keys that contradict each other: a value that cannot take effect with the rest of the config
 * (Retina starts with such configs and silently ignores the part). Each is reported at start as a
 * warning naming the keys; none stops the agent, since what still works (node metrics) is worth
 * running and Retina users' ConfigMaps carry over unchanged (README: "Configuration").
 */
import { flowsWanted, type AgentConfig, type AgentKeys } from './agent.js';
import type { LoadedValues } from './load.js';
import type { KeySpec } from './schema.js';

export interface ConfigWarning {
  /** The keys involved, as written in the config. */
  readonly keys: readonly string[];
  readonly problem: string;
}

export interface ConsistencyInput {
  readonly agent: AgentConfig;
  readonly keys: AgentKeys;
  readonly values: LoadedValues;
  /** Plugins that do nothing unless enablePodLevel (Retina: packetparser). */
  readonly podLevelOnlyPlugins: readonly string[];
}

/** The pod-level pipeline's keys (Retina reads them only with enablePodLevel). */
const POD_LEVEL_KEYS = ['enableAnnotations', 'bypassLookupIPOfInterest', 'filterMapMaxEntries'] as const;
/** Keys of the flow path, read when flows are wanted: enablePodLevel, hubble.enabled or a flow-log exporter (enrichment, flow rings). */
const FLOW_KEYS = ['remoteContext', 'packetParserRingBufferSize'] as const;
/** Agent keys only packetparser reads (with the pod-level pipeline on). */
const PACKETPARSER_KEYS = ['dataAggregationLevel', 'dataSamplingRate', 'conntrackReportInterval', 'enableConntrackMetrics'] as const;

/** What makes the agent want flows (flowsWanted), for the warnings' text. */
const FLOW_REASONS = 'enablePodLevel, hubble.enabled, hubble.metrics.enabled and the flow-log exporters (flowLogs.enabled, hubble.export.static.enabled, hubble.export.dynamic.enabled)';

export function configWarnings(i: ConsistencyInput): ConfigWarning[] {
  const { agent, keys, values } = i;
  const out: ConfigWarning[] = [];
  /** Set to something other than its default (a ConfigMap that spells out every default is fine). */
  const changed = (field: keyof AgentKeys): boolean => {
    const spec = keys[field] as KeySpec<unknown>;
    return values.sourceOf(spec.key) !== 'default' && JSON.stringify(values.get(spec)) !== JSON.stringify(spec.default);
  };
  const shown = (field: keyof AgentKeys): string => `${keys[field].key}: ${JSON.stringify(values.get(keys[field] as KeySpec<unknown>))}`;

  if (!agent.enablePodLevel) {
    for (const p of i.podLevelOnlyPlugins.filter((n) => agent.enabledPlugin.includes(n) && !flowsWanted(agent))) {
      out.push({ keys: ['enabledPlugin', 'enablePodLevel'], problem: `${p} is in enabledPlugin but nothing wants flows (${FLOW_REASONS} are all off): ${p} attaches nothing (as in Retina); set enablePodLevel: true (or hubble.enabled: true, or enable a flow-log exporter) or remove it` });
    }
    for (const f of POD_LEVEL_KEYS) {
      if (changed(f)) out.push({ keys: [keys[f].key, 'enablePodLevel'], problem: `${shown(f)} has no effect while enablePodLevel is false` });
    }
    if (!flowsWanted(agent)) {
      for (const f of FLOW_KEYS) {
        if (changed(f)) out.push({ keys: [keys[f].key, 'enablePodLevel'], problem: `${shown(f)} has no effect while nothing wants flows: ${FLOW_REASONS} are all off` });
      }
    }
  }
  const packetparser = i.podLevelOnlyPlugins.includes('packetparser') && agent.enabledPlugin.includes('packetparser') && flowsWanted(agent);
  if (!packetparser) {
    const why = agent.enabledPlugin.includes('packetparser') ? `nothing wants flows (${FLOW_REASONS} are all off)` : 'packetparser is not in enabledPlugin';
    for (const f of PACKETPARSER_KEYS) {
      if (changed(f)) out.push({ keys: [keys[f].key, 'enabledPlugin'], problem: `${shown(f)} has no effect: only packetparser reads it, and ${why}` });
    }
  }
  // Workers count packetparser's records for the Metrics Module: nothing else is handed to them.
  if (changed('pipelineWorkers') && agent.pipelineWorkers !== 0 && !(agent.enablePodLevel && packetparser)) {
    const why = agent.enablePodLevel ? 'packetparser is not in enabledPlugin' : 'enablePodLevel is false';
    out.push({ keys: [keys.pipelineWorkers.key, agent.enablePodLevel ? 'enabledPlugin' : 'enablePodLevel'], problem: `${shown('pipelineWorkers')} has no effect: workers count packetparser's records at pod level, and ${why}` });
  }
  if (agent.metricsPodLabels.length > 0 && !agent.enablePodLevel && agent.hubbleMetrics.metrics.length === 0) {
    out.push({ keys: [keys.metricsPodLabelsAllowlist.key, 'enablePodLevel'], problem: `${shown('metricsPodLabelsAllowlist')} has no effect: only adv_* (enablePodLevel) and hubble_* (hubble.metrics.enabled) series carry pod labels, and both are off` });
  }
  if (agent.hubble.historyFromExport && !agent.hubble.enabled) {
    out.push({ keys: [keys.hubbleHistoryFromExport.key, keys.hubbleEnabled.key], problem: `${keys.hubbleHistoryFromExport.key} has no effect while ${keys.hubbleEnabled.key} is false: no Hubble server reads the history` });
  }
  if (values.sourceOf(keys.metricsInterval.key) !== 'default' && values.sourceOf(keys.metricsIntervalDuration.key) !== 'default') {
    out.push({ keys: ['metricsInterval', 'metricsIntervalDuration'], problem: 'both are set: metricsIntervalDuration is used and the deprecated metricsInterval is ignored (as in Retina)' });
  }
  return out;
}
