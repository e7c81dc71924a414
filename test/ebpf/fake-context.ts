/** A PluginContext for driving a plugin directly in a test: collecting logger, flows and status. */
import { agentConfig, agentKeys, collectSpecs, flowsWanted, loadValues, type AgentConfig } from '../../src/config/index.js';
import type { FlowBatch } from '../../src/flow/index.js';
import type { LogFields, Logger } from '../../src/log/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import { everyIp, type PluginContext } from '../../src/plugin/index.js';

export interface Collected {
  /** `at`: Date.now() when logged (wall clock, comparable across the test's processes). */
  readonly logs: { level: string; msg: string; fields: LogFields; at: number }[];
  readonly batches: FlowBatch[];
  readonly status: string[];
  readonly lost: { type: string; n: number }[];
  readonly metrics: MetricsRegistry;
}

/** The agent's real defaults (from its key specs), a fast refresh, and `over`. */
export const testAgentConfig = (over: Partial<AgentConfig> = {}): AgentConfig => {
  const keys = agentKeys({ os: 'linux', names: [], defaults: [] });
  const defaults = agentConfig(keys, loadValues({ env: {}, specs: collectSpecs(keys) }));
  return { ...defaults, apiServerHost: '127.0.0.1', apiServerPort: 0, metricsIntervalMs: 100, packetParserRingBufferSize: 1 << 20, ...over };
};

export function fakeContext<C>(config: C, agent: Partial<AgentConfig> = {}): { ctx: PluginContext<C>; got: Collected } {
  const got: Collected = { logs: [], batches: [], status: [], lost: [], metrics: createMetricsRegistry({ processMetrics: false }) };
  const logger = (base: LogFields): Logger => {
    const at = (level: string) => (msg: string, fields: LogFields = {}) => void got.logs.push({ level, msg, fields: { ...base, ...fields }, at: Date.now() });
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (f) => logger({ ...base, ...f }) };
  };
  const agentCfg = testAgentConfig(agent);
  const ctx: PluginContext<C> = {
    config, agent: agentCfg, log: logger({}), metrics: got.metrics,
    self: { lostEvents: (type, n) => void got.lost.push({ type, n }), parsedPackets: () => undefined },
    // As the agent decides it (src/pipeline): a sink only when flows are wanted.
    flows: flowsWanted(agentCfg) ? { consume: (b) => void got.batches.push(b) } : undefined,
    interest: everyIp,
    signal: new AbortController().signal,
    status: { ok: (src) => void got.status.push(`ok: ${src}`), degraded: (src, r) => void got.status.push(`degraded: ${src}: ${r}`), failed: (e) => void got.status.push(`failed: ${String(e)}`) },
  };
  return { ctx, got };
}
