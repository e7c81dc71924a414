/**
 * Hubble metrics (Cilium's `hubble_*` families) and the pod-label allowlist of metrics.
 *
 * `hubble.metrics.enabled` takes Cilium's syntax, entry by entry: `<metric>[:<option>[;<option>]...]`,
 * an option `key=value` or a bare flag (`dns:query;ignoreAAAA;sourceContext=pod|ip;labelsContext=source_namespace`).
 * An entry that cannot be honoured (an unknown metric, an unknown context identifier or label, a metric
 * whose facts our flows do not carry) is refused on its own, with the entry and the reason, and the
 * others run: `hubbleMetricsConfig` returns both. Parsing is here, beside the key, so that `retina-agent`
 * refuses the same strings whatever reads them (the agent and the docs' tests).
 */
import { InvalidValue } from './errors.js';
import type { LoadedValues } from './load.js';
import { listenAddressKey } from './hubble.js';
import type { KeySpec } from './schema.js';

/** Cilium's context identifiers (pkg/hubble/metrics/api/context.go). */
export const CONTEXT_IDENTIFIERS = ['identity', 'namespace', 'pod', 'pod-short', 'pod-name', 'dns', 'ip', 'reserved-identity', 'workload', 'workload-name', 'app'] as const;
export type ContextIdentifier = (typeof CONTEXT_IDENTIFIERS)[number];

/** Cilium's `labelsContext` labels, in Cilium's order (the order label values come in). */
export const CONTEXT_LABELS = [
  'source_ip', 'source_pod', 'source_namespace', 'source_workload', 'source_app',
  'destination_ip', 'destination_pod', 'destination_namespace', 'destination_workload', 'destination_app', 'traffic_direction',
] as const;
export type HubbleContextLabel = (typeof CONTEXT_LABELS)[number];

/** The metrics this agent implements, and those it refuses with the reason. */
export const HUBBLE_METRICS = ['flow', 'drop', 'tcp', 'dns', 'port-distribution', 'flows-to-world'] as const;
export type HubbleMetricName = (typeof HUBBLE_METRICS)[number];

export const UNSUPPORTED_HUBBLE_METRICS: Readonly<Record<string, string>> = {
  icmp: 'our flows carry no ICMP type and code (packetparser and PktMon report the protocol only), so hubble_icmp_total could not say which message it counts',
  http: 'our flows carry no HTTP records (no L7 proxy on the node)',
  httpV2: 'our flows carry no HTTP records (no L7 proxy on the node)',
  kafka: 'our flows carry no Kafka records (no L7 proxy on the node)',
  policy: 'our flows carry no policy verdicts (no policy engine of ours on the node)',
  'flows-per-pod': 'not implemented here',
  sctp: 'not implemented here',
};

export interface HubbleMetricSpec {
  /** The entry as written, for logs and errors. */
  readonly entry: string;
  readonly name: HubbleMetricName;
  readonly source: readonly ContextIdentifier[];
  readonly destination: readonly ContextIdentifier[];
  /** Cilium's per-direction overrides of source/destination (flows of that traffic direction use them instead). */
  readonly sourceEgress: readonly ContextIdentifier[] | undefined;
  readonly sourceIngress: readonly ContextIdentifier[] | undefined;
  readonly destinationEgress: readonly ContextIdentifier[] | undefined;
  readonly destinationIngress: readonly ContextIdentifier[] | undefined;
  /** labelsContext, in Cilium's order. */
  readonly labels: readonly HubbleContextLabel[];
  /** Flag options (lower-cased): dns `query`, `ignoreaaaa`; flows-to-world `any-drop`, `port`, `syn-only`. */
  readonly flags: ReadonlySet<string>;
}

export interface RefusedEntry {
  readonly entry: string;
  readonly reason: string;
}

export interface HubbleMetricsConfig {
  /** The entries that run (one per metric: a later entry of the same metric replaces an earlier, as Cilium's map does). */
  readonly metrics: readonly HubbleMetricSpec[];
  /** The entries refused, each with why; the agent logs them and runs the others. */
  readonly refused: readonly RefusedEntry[];
  /** Where hubble_* metrics are served (Cilium's hubble-metrics-server, `:9965`). */
  readonly listen: { readonly host: string; readonly port: number };
}

const FLAGS: Readonly<Record<HubbleMetricName, readonly string[]>> = {
  flow: [], drop: [], tcp: [], 'port-distribution': [],
  dns: ['query', 'ignoreaaaa'],
  'flows-to-world': ['any-drop', 'port', 'syn-only'],
};

const CONTEXT_KEYS = ['sourcecontext', 'destinationcontext', 'sourceegresscontext', 'sourceingresscontext', 'destinationegresscontext', 'destinationingresscontext', 'labelscontext'];

function parseContext(key: string, value: string): ContextIdentifier[] {
  const out: ContextIdentifier[] = [];
  for (const v of value.split('|')) {
    const id = v.toLowerCase() as ContextIdentifier;
    if (!CONTEXT_IDENTIFIERS.includes(id)) throw new Error(`${key}: unknown context '${v}' (one of ${CONTEXT_IDENTIFIERS.join(', ')}, joined by |)`);
    out.push(id);
  }
  return out;
}

/** One `hubble.metrics.enabled` entry, or the reason it is refused (thrown as an Error). */
export function parseHubbleMetric(entry: string): HubbleMetricSpec {
  const colon = entry.indexOf(':');
  const name = (colon < 0 ? entry : entry.slice(0, colon)).trim();
  const optText = colon < 0 ? '' : entry.slice(colon + 1);
  const unsupported = UNSUPPORTED_HUBBLE_METRICS[name];
  if (unsupported !== undefined) throw new Error(`metric '${name}' is not served by retina-ts: ${unsupported}`);
  if (!HUBBLE_METRICS.includes(name as HubbleMetricName)) throw new Error(`metric '${name}' does not exist (one of ${HUBBLE_METRICS.join(', ')})`);
  const metric = name as HubbleMetricName;
  let source: ContextIdentifier[] = [];
  let destination: ContextIdentifier[] = [];
  let sourceEgress: ContextIdentifier[] | undefined;
  let sourceIngress: ContextIdentifier[] | undefined;
  let destinationEgress: ContextIdentifier[] | undefined;
  let destinationIngress: ContextIdentifier[] | undefined;
  let labels: HubbleContextLabel[] = [];
  const flags = new Set<string>();
  for (const option of optText.split(';')) {
    if (option.trim() === '') continue;
    const eq = option.indexOf('=');
    const key = (eq < 0 ? option : option.slice(0, eq)).trim();
    const value = eq < 0 ? '' : option.slice(eq + 1).trim();
    const k = key.toLowerCase();
    if (CONTEXT_KEYS.includes(k) && value === '') throw new Error(`${key} needs a value`);
    switch (k) {
      case 'sourcecontext': source = parseContext(key, value); break;
      case 'destinationcontext': destination = parseContext(key, value); break;
      case 'sourceegresscontext': sourceEgress = parseContext(key, value); break;
      case 'sourceingresscontext': sourceIngress = parseContext(key, value); break;
      case 'destinationegresscontext': destinationEgress = parseContext(key, value); break;
      case 'destinationingresscontext': destinationIngress = parseContext(key, value); break;
      case 'labelscontext': {
        const wanted = value.split(',').map((l) => l.trim());
        for (const l of wanted) if (!CONTEXT_LABELS.includes(l as HubbleContextLabel)) throw new Error(`invalid labelsContext value: ${l} (one of ${CONTEXT_LABELS.join(', ')})`);
        labels = CONTEXT_LABELS.filter((l) => wanted.includes(l));
        break;
      }
      default:
        // Cilium ignores options it does not know; a typo then silently does nothing, so refuse it.
        if (!FLAGS[metric].includes(k)) {
          throw new Error(`unknown option '${key}' for ${metric} (context options: sourceContext, destinationContext, sourceEgressContext, sourceIngressContext, destinationEgressContext, destinationIngressContext, labelsContext${FLAGS[metric].length ? `; flags: ${FLAGS[metric].join(', ')}` : ''})`);
        }
        flags.add(k);
    }
  }
  return Object.freeze({ entry, name: metric, source, destination, sourceEgress, sourceIngress, destinationEgress, destinationIngress, labels, flags });
}

/** Entries parsed; those that cannot run are refused with the reason, the rest kept. */
export function parseHubbleMetrics(entries: readonly string[]): { metrics: HubbleMetricSpec[]; refused: RefusedEntry[] } {
  const byName = new Map<string, HubbleMetricSpec>();
  const refused: RefusedEntry[] = [];
  for (const entry of entries) {
    try {
      const m = parseHubbleMetric(entry);
      byName.delete(m.name);
      byName.set(m.name, m);
    } catch (e) {
      refused.push({ entry, reason: (e as Error).message });
    }
  }
  return { metrics: [...byName.values()], refused };
}

/** A YAML list of entries, or (as Cilium's hubble-metrics flag and env values are written) one string of entries separated by spaces. */
const enabledKey: KeySpec<readonly string[]> = {
  key: 'hubble.metrics.enabled', default: [], defaultText: '[] (off)',
  doc: 'Ours (Cilium\'s hubble.metrics.enabled): the hubble_* metrics to serve on hubble.metrics.listenAddress, in Cilium\'s syntax, e.g. `drop:sourceContext=pod;destinationContext=pod`. An entry that cannot run is logged with the reason and the others run (docs/hubble.md#hubble-metrics).',
  allowed: 'a list of strings (or one string of entries separated by spaces)',
  schema: { type: 'array', items: { type: 'string' } },
  parse(raw) {
    const items: unknown[] = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.trim().split(/\s+/).filter((s) => s !== '') : [];
    if (!Array.isArray(raw) && typeof raw !== 'string') throw new InvalidValue();
    const out: string[] = [];
    for (const it of items) {
      if (typeof it !== 'string' || it.trim() === '') throw new InvalidValue();
      if (!out.includes(it.trim())) out.push(it.trim());
    }
    return out;
  },
};

const listenKey = listenAddressKey('hubble.metrics.listenAddress', 9965,
  'Ours (Cilium\'s hubble-metrics-server): where hubble_* metrics are served (GET /metrics), when hubble.metrics.enabled names any.');

/** The most pod-label keys metrics may carry: each one multiplies a family's series by its values' count at worst. */
export const MAX_POD_LABEL_KEYS = 8;

/** A Kubernetes label key: an optional DNS-subdomain prefix and `/`, then a name of up to 63 characters. */
const LABEL_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** A Prometheus label name for a pod label key: every character outside [a-zA-Z0-9_] becomes `_`, behind `label_` (kube-state-metrics' rule). */
export function podLabelName(key: string): string {
  return 'label_' + key.replace(/[^a-zA-Z0-9_]/g, '_');
}

const podLabelsKey: KeySpec<readonly string[]> = {
  key: 'metricsPodLabelsAllowlist', default: [], defaultText: '[] (none)',
  doc: `Ours (kube-state-metrics' --metric-labels-allowlist): pod label keys added to adv_* and hubble_* series as label_<key> (source_label_<key>/destination_label_<key> in remote context and on hubble_*), at most ${MAX_POD_LABEL_KEYS}; in remote context a key must also be in the operator's retinaEndpointLabels.`,
  allowed: `a list of at most ${MAX_POD_LABEL_KEYS} Kubernetes label keys (such as app, team, app.kubernetes.io/name) whose label names (label_<key>, characters outside [a-zA-Z0-9_] as _) differ`,
  schema: { type: 'array', items: { type: 'string' }, maxItems: MAX_POD_LABEL_KEYS },
  parse(raw) {
    const items: unknown[] = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.replace(/^\[|\]$/g, '').split(',').map((s) => s.trim()).filter((s) => s !== '') : [];
    if (!Array.isArray(raw) && typeof raw !== 'string') throw new InvalidValue();
    const out: string[] = [];
    const names = new Map<string, string>();
    for (const it of items) {
      if (typeof it !== 'string' || !LABEL_KEY.test(it)) throw new InvalidValue(`${podLabelsKey.allowed} (not a label key: ${String(it)})`);
      if (out.includes(it)) continue;
      const n = podLabelName(it);
      const clash = names.get(n);
      if (clash !== undefined) throw new InvalidValue(`${podLabelsKey.allowed} (${clash} and ${it} both become ${n})`);
      names.set(n, it);
      out.push(it);
    }
    if (out.length > MAX_POD_LABEL_KEYS) throw new InvalidValue(`${podLabelsKey.allowed} (${out.length} given)`);
    return out;
  },
};

export function hubbleMetricsKeys() {
  return {
    hubbleMetricsEnabled: enabledKey,
    hubbleMetricsListenAddress: listenKey,
    metricsPodLabelsAllowlist: podLabelsKey,
  };
}

export type HubbleMetricsKeys = ReturnType<typeof hubbleMetricsKeys>;

export function hubbleMetricsConfig(keys: HubbleMetricsKeys, v: LoadedValues): HubbleMetricsConfig {
  const { metrics, refused } = parseHubbleMetrics(v.get(keys.hubbleMetricsEnabled));
  return Object.freeze({ metrics: Object.freeze(metrics), refused: Object.freeze(refused), listen: Object.freeze({ ...v.get(keys.hubbleMetricsListenAddress) }) });
}
