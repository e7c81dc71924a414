/**
 * Stored flow logs' keys (issue 28; docs/flow-logs.md):
 *
 * - Cilium's Hubble exporter, so a Cilium user's settings carry over, in both of Cilium's spellings:
 *   its Helm values' shape (`hubble.export.static.*`, `hubble.export.dynamic.*`) and its agent
 *   flags / cilium-config keys (`hubble-export-file-path`, `hubble-export-allowlist`, ...,
 *   `hubble-flowlogs-config-path`). Where both are set the Helm-shaped key wins. As in Cilium, the
 *   static exporter runs when `hubble.export.static.enabled` is true or `hubble-export-file-path` is
 *   set; the dynamic one when `hubble.export.dynamic.enabled` is true or
 *   `hubble-flowlogs-config-path` is set.
 * - `flowLogs.*`: the exporter ContainerNetworkLog resources drive (ACNS's file path by default).
 *
 * Filters are kept as FlowFilter objects here (this layer imports nothing); the exporter compiles
 * them with the Observer's compiler and names the key and field of a filter it rejects.
 */
import { InvalidValue } from './errors.js';
import type { LoadedValues } from './load.js';
import { boolKey, durationKey, intKey, stringKey, type KeySpec } from './schema.js';

export type FilterObject = Readonly<Record<string, unknown>>;

export interface ExportFileConfig {
  readonly path: string;
  readonly maxSizeMb: number;
  /** 0 keeps every rotated file (lumberjack's meaning). */
  readonly maxBackups: number;
  readonly compress: boolean;
}

export interface StaticExportConfig {
  readonly file: ExportFileConfig;
  readonly allowList: readonly FilterObject[];
  readonly denyList: readonly FilterObject[];
  readonly fieldMask: readonly string[];
  /** 0: one record per flow; else aggregated per interval. */
  readonly aggregationIntervalMs: number;
  /** The key each list was read from, for errors that name it. */
  readonly keys: { readonly allowList: string; readonly denyList: string; readonly fieldMask: string };
}

export interface FlowLogsConfig {
  /** hubble.export.static (undefined: off). */
  readonly static: StaticExportConfig | undefined;
  /** hubble.export.dynamic: the flowlogs.yaml to follow (undefined: off). */
  readonly dynamic: { readonly configFilePath: string; readonly defaults: Omit<ExportFileConfig, 'path'> } | undefined;
  /** flowLogs.*: the ContainerNetworkLog-driven exporter (undefined: off). */
  readonly cnl: { readonly file: ExportFileConfig; readonly aggregation: { readonly intervalMs: number; readonly maxKeys: number } | undefined } | undefined;
  /** Flow keys at most per aggregation interval, for every exporter that aggregates. */
  readonly aggregationMaxKeys: number;
}

/** ACNS's documented host path of container network logs on Linux nodes. */
export const ACNS_LINUX_PATH = '/var/log/acns/hubble/events.log';
/** Ours on Windows nodes (ACNS has none: its flow logs are Linux-only), under the kubelet's C:\k. */
export const WINDOWS_FLOW_LOG_PATH = 'C:\\k\\retina\\flowlogs\\events.log';
/** Our static exporter's default file (Cilium's is /var/run/cilium/hubble/events.log, Cilium's own directory). */
export const STATIC_EXPORT_PATH = '/var/run/retina/hubble/events.log';
export const STATIC_EXPORT_PATH_WINDOWS = 'C:\\k\\retina\\hubble\\events.log';
/** Where the chart mounts the dynamic exporters' ConfigMap (Cilium: /flowlog-config/flowlogs.yaml). */
export const DYNAMIC_CONFIG_PATH = '/flowlog-config/flowlogs.yaml';

/** Splits Cilium's flag form: JSON objects one after another, separated by spaces or commas. */
export function splitJsonObjects(s: string): unknown[] {
  const out: unknown[] = [];
  let i = 0;
  while (i < s.length) {
    while (i < s.length && /[\s,]/.test(s[i] as string)) i++;
    if (i >= s.length) break;
    if (s[i] === '[') {
      // A JSON array of filters.
      const arr = JSON.parse(s.slice(i)) as unknown;
      if (!Array.isArray(arr)) throw new InvalidValue();
      out.push(...arr);
      break;
    }
    if (s[i] !== '{') throw new InvalidValue();
    let depth = 0;
    let inString = false;
    let j = i;
    for (; j < s.length; j++) {
      const c = s[j];
      if (inString) {
        if (c === '\\') j++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) break;
    }
    if (depth !== 0) throw new InvalidValue();
    out.push(JSON.parse(s.slice(i, j + 1)) as unknown);
    i = j + 1;
  }
  return out;
}

const FILTERS_ALLOWED = 'a list of Hubble FlowFilter objects (YAML mappings, or JSON strings as Cilium\'s flags take them, e.g. {"verdict":["DROPPED"]})';

/** A list of FlowFilter objects: YAML mappings, JSON strings of them, or one string of several (Cilium's flag form). */
export function filterListKey(key: string, doc: string): KeySpec<readonly FilterObject[]> {
  return {
    key, default: [], doc, allowed: FILTERS_ALLOWED, defaultText: '[]',
    schema: { type: 'array', items: { oneOf: [{ type: 'object' }, { type: 'string' }] } },
    parse(raw) {
      let items: unknown[];
      try {
        if (Array.isArray(raw)) items = raw.flatMap((it) => (typeof it === 'string' ? splitJsonObjects(it) : [it]));
        else if (typeof raw === 'string') items = splitJsonObjects(raw.trim());
        else throw new InvalidValue();
      } catch (e) {
        throw new InvalidValue(`${FILTERS_ALLOWED}: ${e instanceof SyntaxError ? `not JSON (${e.message})` : 'not a list of filters'}`);
      }
      return Object.freeze(items.map((it, i) => {
        if (it === null || typeof it !== 'object' || Array.isArray(it)) throw new InvalidValue(`${FILTERS_ALLOWED}: item ${i} is not a FlowFilter object`);
        return Object.freeze(it as FilterObject);
      }));
    },
  };
}

/** Field-mask paths: a YAML list, or one string separated by spaces or commas (Cilium's flag form). */
export function fieldMaskKey(key: string, doc: string): KeySpec<readonly string[]> {
  const allowed = 'a list of flow field paths such as time, source.namespace, l4 (Cilium\'s hubble-export-fieldmask)';
  return {
    key, default: [], doc, allowed, defaultText: '[]', schema: { type: 'array', items: { type: 'string' } },
    parse(raw) {
      const parts = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(/[\s,]+/) : undefined;
      if (parts === undefined) throw new InvalidValue();
      const out: string[] = [];
      for (const p of parts) {
        if (typeof p !== 'string' || !/^[A-Za-z_][\w.]*$|^$/.test(p.trim())) throw new InvalidValue(`${allowed} (bad: ${JSON.stringify(p)})`);
        if (p.trim() !== '' && !out.includes(p.trim())) out.push(p.trim());
      }
      return Object.freeze(out);
    },
  };
}

export function flowLogsKeys(os: string) {
  const windows = os === 'windows';
  return {
    // Cilium's Helm values' shape.
    exportStaticEnabled: boolKey('hubble.export.static.enabled', false, 'Cilium\'s: write the flows the allow/deny lists select to hubble.export.static.filePath (Hubble JSON lines).'),
    exportStaticFilePath: stringKey('hubble.export.static.filePath', windows ? STATIC_EXPORT_PATH_WINDOWS : STATIC_EXPORT_PATH, 'Cilium\'s: the static exporter\'s file.', { nonEmpty: true }),
    exportStaticFileMaxSizeMb: intKey('hubble.export.static.fileMaxSizeMb', 10, 'Cilium\'s: rotate the file at this size (MB).', { min: 1, max: 1_000_000 }),
    exportStaticFileMaxBackups: intKey('hubble.export.static.fileMaxBackups', 5, 'Cilium\'s: rotated files kept (0: all).', { min: 0, max: 100_000 }),
    exportStaticFileCompress: boolKey('hubble.export.static.fileCompress', false, 'Cilium\'s: gzip rotated files.'),
    exportStaticAllowList: filterListKey('hubble.export.static.allowList', 'Cilium\'s: export flows matching any of these FlowFilters (empty: all).'),
    exportStaticDenyList: filterListKey('hubble.export.static.denyList', 'Cilium\'s: never export flows matching any of these FlowFilters.'),
    exportStaticFieldMask: fieldMaskKey('hubble.export.static.fieldMask', 'Cilium\'s: write only these flow fields (empty: all).'),
    exportStaticAggregationInterval: durationKey('hubble.export.static.aggregationInterval', 0, 'Ours with Cilium\'s name: 0s writes one record per flow; longer writes one record per (source, destination, protocol, port, verdict, direction) per interval.'),
    exportDynamicEnabled: boolKey('hubble.export.dynamic.enabled', false, 'Cilium\'s: run the exporters listed in hubble.export.dynamic.configFilePath, re-read when it changes.'),
    exportDynamicConfigFilePath: stringKey('hubble.export.dynamic.configFilePath', DYNAMIC_CONFIG_PATH, 'Ours (Cilium: hubble-flowlogs-config-path): the dynamic exporters\' file (Cilium\'s flowlogs.yaml format).', { nonEmpty: true }),
    // Cilium's agent flags / cilium-config keys.
    ciliumExportFilePath: stringKey('hubble-export-file-path', '', 'Cilium\'s flag: set, it runs the static exporter into this file.'),
    ciliumExportFileMaxSizeMb: intKey('hubble-export-file-max-size-mb', 10, 'Cilium\'s flag: as hubble.export.static.fileMaxSizeMb.', { min: 1, max: 1_000_000 }),
    ciliumExportFileMaxBackups: intKey('hubble-export-file-max-backups', 5, 'Cilium\'s flag: as hubble.export.static.fileMaxBackups.', { min: 0, max: 100_000 }),
    ciliumExportFileCompress: boolKey('hubble-export-file-compress', false, 'Cilium\'s flag: as hubble.export.static.fileCompress.'),
    ciliumExportAllowlist: filterListKey('hubble-export-allowlist', 'Cilium\'s flag: as hubble.export.static.allowList (JSON FlowFilters separated by spaces or commas).'),
    ciliumExportDenylist: filterListKey('hubble-export-denylist', 'Cilium\'s flag: as hubble.export.static.denyList.'),
    ciliumExportFieldmask: fieldMaskKey('hubble-export-fieldmask', 'Cilium\'s flag: as hubble.export.static.fieldMask (paths separated by spaces).'),
    ciliumFlowlogsConfigPath: stringKey('hubble-flowlogs-config-path', '', 'Cilium\'s flag: set, it runs the dynamic exporters of this file.'),
    // The ContainerNetworkLog-driven exporter.
    flowLogsEnabled: boolKey('flowLogs.enabled', false, 'Ours (ACNS\'s container network logs): export the flows ContainerNetworkLog resources select to flowLogs.filePath.'),
    flowLogsFilePath: stringKey('flowLogs.filePath', windows ? WINDOWS_FLOW_LOG_PATH : ACNS_LINUX_PATH, `Ours: the container network logs' file (ACNS's ${ACNS_LINUX_PATH} on Linux; ${WINDOWS_FLOW_LOG_PATH} on Windows).`, { nonEmpty: true }),
    flowLogsFileMaxSizeMb: intKey('flowLogs.fileMaxSizeMb', 10, 'Ours: rotate the container network logs\' file at this size (MB).', { min: 1, max: 1_000_000 }),
    flowLogsFileMaxBackups: intKey('flowLogs.fileMaxBackups', 5, 'Ours: rotated files kept (0: all).', { min: 0, max: 100_000 }),
    flowLogsFileCompress: boolKey('flowLogs.fileCompress', false, 'Ours: gzip rotated files.'),
    flowLogsAggregationEnabled: boolKey('flowLogs.aggregation.enabled', false, 'Ours: one record per (source, destination, protocol, port, verdict, direction) per interval, with packet and byte sums.'),
    flowLogsAggregationInterval: durationKey('flowLogs.aggregation.interval', 30_000, 'Ours: the aggregation interval.', { minMs: 1000 }),
    flowLogsAggregationMaxKeys: intKey('flowLogs.aggregation.maxKeys', 16_384, 'Ours: keys kept per interval by every aggregating exporter; flows past it fold into one overflow record.', { min: 1, max: 10_000_000 }),
  };
}

export type FlowLogsKeys = ReturnType<typeof flowLogsKeys>;

/** The Helm-shaped key when set, else Cilium's flag when set, else the Helm-shaped key's default. */
function either<T>(v: LoadedValues, helm: KeySpec<T>, flag: KeySpec<T>): { value: T; key: string } {
  if (v.sourceOf(helm.key) !== 'default' || v.sourceOf(flag.key) === 'default') return { value: v.get(helm), key: helm.key };
  return { value: v.get(flag), key: flag.key };
}

export function flowLogsConfig(k: FlowLogsKeys, v: LoadedValues): FlowLogsConfig {
  const flagPath = v.get(k.ciliumExportFilePath);
  const staticOn = v.get(k.exportStaticEnabled) || flagPath !== '';
  const maxSizeMb = either(v, k.exportStaticFileMaxSizeMb, k.ciliumExportFileMaxSizeMb).value;
  const maxBackups = either(v, k.exportStaticFileMaxBackups, k.ciliumExportFileMaxBackups).value;
  const compress = either(v, k.exportStaticFileCompress, k.ciliumExportFileCompress).value;
  const allow = either(v, k.exportStaticAllowList, k.ciliumExportAllowlist);
  const deny = either(v, k.exportStaticDenyList, k.ciliumExportDenylist);
  const mask = either(v, k.exportStaticFieldMask, k.ciliumExportFieldmask);
  const path = v.sourceOf(k.exportStaticFilePath.key) === 'default' && flagPath !== '' ? flagPath : v.get(k.exportStaticFilePath);
  const flowlogsPath = v.get(k.ciliumFlowlogsConfigPath);
  const dynamicOn = v.get(k.exportDynamicEnabled) || flowlogsPath !== '';
  const dynamicPath = v.sourceOf(k.exportDynamicConfigFilePath.key) === 'default' && flowlogsPath !== '' ? flowlogsPath : v.get(k.exportDynamicConfigFilePath);
  return Object.freeze({
    static: staticOn
      ? Object.freeze({
        file: Object.freeze({ path, maxSizeMb, maxBackups, compress }),
        allowList: allow.value, denyList: deny.value, fieldMask: mask.value,
        aggregationIntervalMs: v.get(k.exportStaticAggregationInterval),
        keys: Object.freeze({ allowList: allow.key, denyList: deny.key, fieldMask: mask.key }),
      })
      : undefined,
    dynamic: dynamicOn ? Object.freeze({ configFilePath: dynamicPath, defaults: Object.freeze({ maxSizeMb, maxBackups, compress }) }) : undefined,
    cnl: v.get(k.flowLogsEnabled)
      ? Object.freeze({
        file: Object.freeze({ path: v.get(k.flowLogsFilePath), maxSizeMb: v.get(k.flowLogsFileMaxSizeMb), maxBackups: v.get(k.flowLogsFileMaxBackups), compress: v.get(k.flowLogsFileCompress) }),
        aggregation: v.get(k.flowLogsAggregationEnabled) ? Object.freeze({ intervalMs: v.get(k.flowLogsAggregationInterval), maxKeys: v.get(k.flowLogsAggregationMaxKeys) }) : undefined,
      })
      : undefined,
    aggregationMaxKeys: v.get(k.flowLogsAggregationMaxKeys),
  });
}
