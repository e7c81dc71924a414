/**
 * The key specs the chart's schema is generated from, gathered from each component (agent of each
 * OS with its plugins, operator): wiring for src/chart (which sees only src/config).
 */
import { agentKeys, type KeySpec } from '../config/index.js';
import { operatorKeys } from '../operator/index.js';
import { loadPlugins } from '../platform/index.js';
import { withConfigSections, withRetinaEntries, type ConfigSpecs, type SchemaNode } from '../chart/index.js';

type Spec = KeySpec<unknown>;

export async function configSpecs(): Promise<ConfigSpecs> {
  const agent = {} as Record<'linux' | 'windows', Spec[]>;
  const plugins = {} as Record<'linux' | 'windows', Spec[]>;
  for (const os of ['linux', 'windows'] as const) {
    const ps = await loadPlugins(os);
    agent[os] = Object.values(agentKeys({ os, names: ps.map((p) => p.name), defaults: ps.filter((p) => p.defaultEnabled).map((p) => p.name) })) as Spec[];
    plugins[os] = ps.flatMap((p) => Object.values(p.config as Record<string, Spec>));
  }
  return { agent, plugins, operator: Object.values(operatorKeys()) as Spec[] };
}

/** values.schema.json as `make chart-gen` writes it: config sections from the specs, then the Retina entries. */
export async function chartSchema(current: SchemaNode): Promise<SchemaNode> {
  return withRetinaEntries(withConfigSections(current, await configSpecs()));
}
