/** A plugin context over a fresh registry, with the statuses recorded (Windows suite). */
import { agentConfig, agentKeys, collectSpecs, loadValues, pick, type ConfigSpec } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../../../src/metrics/index.js';
import { everyIp, type AnyPluginDefinition, type PluginContext } from '../../../src/plugin/index.js';

export function pluginContext(def: AnyPluginDefinition, intervalMs = 200): { ctx: PluginContext<unknown>; metrics: MetricsRegistry; statuses: string[]; abort: AbortController } {
  const keys = agentKeys({ os: def.os, names: [def.name], defaults: [def.name] });
  const values = loadValues({ env: { RETINA_METRICSINTERVALDURATION: `${intervalMs}ms` }, specs: collectSpecs(keys, def.config as ConfigSpec<object>) });
  const abort = new AbortController();
  const metrics = createMetricsRegistry({ processMetrics: false });
  const statuses: string[] = [];
  return {
    metrics, statuses, abort,
    ctx: {
      config: pick(def.config, values), agent: agentConfig(keys, values), log: silentLogger, metrics,
      self: { lostEvents: () => undefined, parsedPackets: () => undefined },
      flows: undefined, interest: everyIp, signal: abort.signal, // the defaults: no flows wanted
      status: { ok: (s) => statuses.push(`ok: ${s}`), degraded: (s, r) => statuses.push(`degraded: ${s}: ${r}`), failed: (e) => statuses.push(`failed: ${String(e)}`) },
    },
  };
}

/** The value of one series in Prometheus text, or undefined. */
export function seriesValue(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`networkobservability_${name}{`)) continue;
    const m = /^[^{]+\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const got = Object.fromEntries([...(m[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v) && Object.keys(got).length === Object.keys(labels).length) return Number(m[2]);
  }
  return undefined;
}

export async function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
