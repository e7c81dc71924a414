/**
 * The config sections of the chart's values.schema.json, generated from the key specs (src/config,
 * the plugins', the operator's): `config` (keys both agents read), `agent.linux.config` and
 * `agent.windows.config` (each OS's own keys and plugin keys, plus the per-OS overrides), and
 * `operator.config`. Everything else in values.schema.json is the chart's own keys, declared there
 * (that file is their one place); a grouping object's description is kept from it. Every generated key
 * also takes null (the chart leaves a null key out, so the agent's default applies) and carries the
 * key's doc as its description. `make chart-gen` writes it; test/chart/retina-compat.test.ts fails when
 * the checked-in file is stale.
 */
import type { JsonSchema, KeySpec } from '../config/index.js';
import type { SchemaNode } from './files.js';

/** Agent keys only the Linux agent reads (packetparser's and the filter map's). */
export const LINUX_ONLY_AGENT_KEYS: readonly string[] = ['dataAggregationLevel', 'dataSamplingRate', 'conntrackReportInterval', 'enableConntrackMetrics', 'packetParserRingBufferSize', 'filterMapMaxEntries'];
/** Keys each OS section sets for itself (their values differ per OS). */
export const PER_OS_AGENT_KEYS: readonly string[] = ['enabledPlugin'];
/** Shared keys an OS section may override. */
export const OS_OVERRIDES: readonly string[] = ['logLevel', 'metricsIntervalDuration'];
/** Operator keys the chart sets from elsewhere (remoteContext from config.remoteContext). */
export const OPERATOR_FROM_CONFIG: readonly string[] = ['remoteContext'];

/**
 * Keys the chart's templates read themselves: never null, and narrowed where the chart needs more
 * than the agent (the Service, probes and scrape annotations need a fixed port, not 0).
 */
export const CHART_READS: Readonly<Record<string, JsonSchema>> = {
  'config.apiServer.port': { minimum: 1 },
  'config.remoteContext': {},
};

type Spec = KeySpec<unknown>;

export interface ConfigSpecs {
  /** agentKeys() of each OS (their enabledPlugin lists that OS's plugins). */
  readonly agent: { readonly linux: readonly Spec[]; readonly windows: readonly Spec[] };
  readonly plugins: { readonly linux: readonly Spec[]; readonly windows: readonly Spec[] };
  readonly operator: readonly Spec[];
}

/** A key's schema: its spec's, else one from its default's type. */
function keySchema(k: Spec): JsonSchema {
  if (k.schema) return k.schema;
  const d = k.default;
  if (typeof d === 'boolean') return { type: 'boolean' };
  if (typeof d === 'number') return { type: Number.isInteger(d) ? 'integer' : 'number' };
  if (Array.isArray(d)) return { type: 'array', items: { type: 'string' } };
  return { type: 'string' };
}

/** The properties of one section: nested objects for dotted keys, a grouping's description kept from `old`. */
function section(path: string, keys: readonly Spec[], old: SchemaNode | undefined): Record<string, SchemaNode> {
  const out: Record<string, SchemaNode> = {};
  for (const k of keys) {
    const parts = k.key.split('.');
    let props = out;
    let was = old;
    for (const p of parts.slice(0, -1)) {
      was = was?.properties?.[p];
      props[p] ??= { type: 'object', additionalProperties: false, ...(was?.description ? { description: was.description } : {}), properties: {} };
      props = props[p].properties as Record<string, SchemaNode>;
    }
    const chart = CHART_READS[`${path}.${k.key}`];
    props[parts[parts.length - 1] as string] = chart ? { description: k.doc, ...keySchema(k), ...chart } : { description: k.doc, oneOf: [{ type: 'null' }, keySchema(k)] };
  }
  return out;
}

const byKey = (list: readonly Spec[], keys: readonly string[]): Spec[] => keys.map((n) => {
  const s = list.find((k) => k.key === n);
  if (!s) throw new Error(`no agent key ${n}`);
  return s;
});

/** values.schema.json with its config sections generated from the specs (the rest unchanged). */
export function withConfigSections(schema: SchemaNode, specs: ConfigSpecs): SchemaNode {
  const out = JSON.parse(JSON.stringify(schema)) as SchemaNode;
  const at = (path: string): SchemaNode => {
    let n: SchemaNode | undefined = out;
    for (const p of path.split('.')) n = n?.properties?.[p];
    if (!n) throw new Error(`values.schema.json has no ${path}`);
    return n;
  };
  const osOnly = new Set([...LINUX_ONLY_AGENT_KEYS, ...PER_OS_AGENT_KEYS]);
  const shared = specs.agent.linux.filter((k) => !osOnly.has(k.key));
  const os = (name: 'linux' | 'windows'): Spec[] => [
    ...byKey(specs.agent[name], PER_OS_AGENT_KEYS),
    ...(name === 'linux' ? byKey(specs.agent.linux, LINUX_ONLY_AGENT_KEYS) : []),
    ...specs.plugins[name],
    ...byKey(specs.agent[name], OS_OVERRIDES),
  ];
  for (const [path, keys] of [
    ['config', shared],
    ['agent.linux.config', os('linux')],
    ['agent.windows.config', os('windows')],
    ['operator.config', specs.operator.filter((k) => !OPERATOR_FROM_CONFIG.includes(k.key))],
  ] as const) {
    const node = at(path);
    node.properties = section(path, keys, node);
  }
  return out;
}
