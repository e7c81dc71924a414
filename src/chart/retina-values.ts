/**
 * Microsoft Retina's Helm values (its standard chart, deploy/standard/manifests/controller/helm/retina,
 * and its Hubble chart, deploy/hubble/manifests/controller/helm/retina) turned into this chart's values.
 * One table, RETINA_KEYS, says for each Retina key where it goes here or why it cannot; the
 * `kubectl retina migrate-values` command and the chart's own check of Retina keys
 * (charts/retina/retina-keys.yaml, generated from this table) both read it.
 */

/** A values tree (Helm values: maps, lists, scalars). */
export type Values = { [k: string]: unknown };

export interface Target {
  /** Our key, dotted. */
  readonly to: string;
  /** Turns Retina's value into ours; undefined means "leave out" (with `why` as the note). */
  readonly map?: (v: unknown, all: Values) => unknown;
}

export interface RetinaKey {
  /** Where the value goes here (one Retina key may set several of ours, e.g. both OSes). */
  readonly to?: readonly Target[];
  /** Why it is not mapped (or only partly): shown to the user. */
  readonly why?: string;
  /** Also covers every key below this one (a subtree such as hubble.ui). */
  readonly subtree?: boolean;
}

const same = (to: string): RetinaKey => ({ to: [{ to }] });
const both = (key: string, extra: Partial<Target> = {}): RetinaKey => ({ to: [{ to: `agent.linux.${key}`, ...extra }, { to: `agent.windows.${key}`, ...extra }] });
const drop = (why: string, subtree = false): RetinaKey => ({ why, subtree });

/** Retina's enabledPlugin_linux/_win: a JSON-ish list in a string ('["a","b"]'), or a YAML list. */
export function pluginList(v: unknown): string[] {
  if (Array.isArray(v)) return v.map(String);
  const s = String(v).trim();
  const inner = s.startsWith('[') && s.endsWith(']') ? s.slice(1, -1) : s;
  return inner.split(',').map((x) => x.trim().replace(/^["']|["']$/g, '')).filter((x) => x !== '');
}

/** Retina's log levels (zap: debug, info, warn, error, panic, fatal) to ours. */
const logLevel = (v: unknown): unknown => {
  const s = String(v).toLowerCase();
  return s === 'panic' || s === 'fatal' || s === 'dpanic' ? 'error' : s;
};

/** `:4244` or `host:4244` to 4244. */
const listenPort = (v: unknown): unknown => {
  const m = /:(\d+)$/.exec(String(v));
  return m ? Number(m[1]) : undefined;
};

const probe = (v: unknown): unknown => (v && typeof v === 'object' && Object.keys(v).length ? v : undefined);
/** Retina's affinity default is a list ([]): an empty one means none. */
const affinity = (v: unknown): unknown => (Array.isArray(v) ? undefined : probe(v));
const image = 'Retina\'s image; ours runs the retina-ts image (image.linux / image.windows, tag defaulting to the chart\'s version)';
const telemetry = 'Retina\'s Application Insights telemetry: ours sends none';
const RELAY = 'ours deploys Hubble Relay with only its image, replicas, resources, nodeSelector, tolerations, sort buffer and TLS to the agents set';
const monitorScheme = 'ours sets scheme and TLS from metricsSecurity.tls';
const monitorNamespace = 'ours puts monitors in the release namespace';

function monitor(ours: 'serviceMonitor' | 'podMonitor'): Record<string, RetinaKey> {
  const p = `metrics.${ours}`;
  return {
    [`${p}.enabled`]: same(`monitoring.${ours}.enabled`),
    [`${p}.namespace`]: { to: [{ to: 'monitoring.namespace', map: () => undefined }], why: monitorNamespace },
    [`${p}.interval`]: same('monitoring.interval'),
    [`${p}.scrapeTimeout`]: same('monitoring.scrapeTimeout'),
    [`${p}.additionalLabels`]: same('monitoring.labels'),
    [`${p}.scheme`]: drop(monitorScheme),
    [`${p}.tlsConfig`]: drop(monitorScheme, true),
    [`${p}.relabelings`]: same(`monitoring.${ours}.relabelings`),
    [`${p}.metricRelabelings`]: same(`monitoring.${ours}.metricRelabelings`),
  };
}

/**
 * Every key of Retina's two charts (their values.yaml at microsoft/retina 532c5aa, plus enableTCX,
 * which its templates read), keyed by the dotted path. A key under a `subtree` entry is covered by it.
 */
export const RETINA_KEYS: Readonly<Record<string, RetinaKey>> = {
  'os.linux': same('agent.linux.enabled'),
  'os.windows': same('agent.windows.enabled'),
  'operator.enabled': same('operator.enabled'),
  'operator.name': drop('ours names the operator <fullname>-operator'),
  'operator.replicas': same('operator.replicas'),
  'operator.repository': drop(image),
  'operator.tag': drop(image),
  'operator.pullPolicy': drop('ours pulls the operator with image.linux.pullPolicy'),
  'operator.installCRDs': same('operator.config.installCRDs'),
  'operator.enableRetinaEndpoint': same('operator.config.enableRetinaEndpoint'),
  'operator.leaderElection': same('operator.config.enableLeaderElection'),
  'operator.leaderElectionNamespace': { to: [{ to: 'operator.config.leaderElectionNamespace', map: (v) => (v ? v : undefined) }] },
  'operator.identityGCInterval': drop('Cilium identity GC: ours keeps no Cilium identities'),
  'operator.endpointGCInterval': drop('Cilium endpoint GC: ours keeps no Cilium endpoints'),
  'operator.resources': same('operator.resources'),
  'operator.affinity': { to: [{ to: 'operator.affinity', map: affinity }] },
  'operator.tolerations': same('operator.tolerations'),
  'operator.container': drop('Retina\'s operator binary and flags; ours: operator.command / operator.args (default: the image\'s operator)', true),
  'operator.telemetryInterval': drop(telemetry),
  'image.repository': drop(image),
  'image.tag': drop(image),
  'image.pullPolicy': { to: [{ to: 'image.linux.pullPolicy' }, { to: 'image.windows.pullPolicy' }] },
  'image.initRepository': drop('ours has no init container (the agent mounts bpffs and creates its maps itself)'),
  'agent.name': drop('ours names the agents <fullname>-agent-linux / -agent-windows'),
  'agent.enabled': same('agent.linux.enabled'),
  'agent.repository': drop(image),
  'agent.tag': drop(image),
  'agent.pullPolicy': { to: [{ to: 'image.linux.pullPolicy' }, { to: 'image.windows.pullPolicy' }] },
  'agent.init': drop('ours has no init container', true),
  'agent.leaderElection': drop('the agents elect no leader in ours'),
  'agent.container': drop('Retina\'s agent binary, flags and ports; ours: agent.linux.command / args, and config.apiServer.port', true),
  'agent.tolerations': both('tolerations'),
  agent_win: drop('ours names the Windows agents <fullname>-agent-windows', true),
  enableConntrackMetrics: same('agent.linux.config.enableConntrackMetrics'),
  conntrackReportInterval: same('agent.linux.config.conntrackReportInterval'),
  enablePodLevel: same('config.enablePodLevel'),
  remoteContext: same('config.remoteContext'),
  enableAnnotations: same('config.enableAnnotations'),
  bypassLookupIPOfInterest: same('config.bypassLookupIPOfInterest'),
  dataAggregationLevel: same('agent.linux.config.dataAggregationLevel'),
  dataSamplingRate: same('agent.linux.config.dataSamplingRate'),
  packetParserRingBuffer: drop('ours always uses a BPF ring buffer (its size: packetParserRingBufferSize)'),
  packetParserRingBufferSize: same('agent.linux.config.packetParserRingBufferSize'),
  filterMapMaxEntries: same('agent.linux.config.filterMapMaxEntries'),
  enableTCX: drop('ours picks TCX where the kernel has it, else clsact (agent.linux.config.packetForwardTcMode / packetParserTcMode)'),
  monitorSockPath: drop('Cilium\'s monitor socket: ours reads no Cilium agent'),
  imagePullSecrets: same('imagePullSecrets'),
  nameOverride: drop('ours names objects <release>-retina-<component> (or fullnameOverride-<component>)'),
  fullnameOverride: drop('Retina names its Service with it (retina-svc); ours: service.serviceName'),
  namespace: drop('ours installs into the release namespace (helm install -n kube-system)'),
  retinaPort: same('config.apiServer.port'),
  'apiServer.host': same('config.apiServer.host'),
  'apiServer.port': drop('Retina\'s chart does not read it (the agent\'s port is retinaPort)'),
  logLevel: { to: [{ to: 'config.logLevel', map: logLevel }] },
  enabledPlugin_linux: { to: [{ to: 'agent.linux.config.enabledPlugin', map: pluginList }] },
  enabledPlugin_win: { to: [{ to: 'agent.windows.config.enabledPlugin', map: pluginList }] },
  enableTelemetry: drop(telemetry),
  metricsInterval: {
    to: [{ to: 'config.metricsInterval', map: (v, all) => (all['metricsIntervalDuration'] === undefined ? v : undefined) }],
    why: 'metricsIntervalDuration is set and wins (as in Retina)',
  },
  metricsIntervalDuration: same('config.metricsIntervalDuration'),
  azure: drop(telemetry, true),
  debug: drop('Cilium\'s debug switch: ours logs at config.logLevel', true),
  cluster: drop('Cilium\'s cluster name: ours reports none', true),
  externalWorkloads: drop('Cilium\'s external workloads: not in ours', true),
  'daemonset.container.retina.command': drop('Retina\'s agent binary; ours: agent.linux.command (default: the image\'s agent)'),
  'daemonset.container.retina.args': drop('Retina\'s agent flags; ours: agent.linux.args (default: --config /retina/config/config.yaml)'),
  'daemonset.container.retina.env': { to: [{ to: 'agent.linux.extraEnv', map: (v) => (Array.isArray(v) && v.length ? v : undefined) }] },
  'daemonset.container.retina.healthProbeBindAddress': drop('ours serves /healthz and /readyz on config.apiServer.port'),
  'daemonset.container.retina.metricsBindAddress': drop('ours serves /metrics on config.apiServer.port'),
  'daemonset.container.retina.ports.containerPort': drop('Retina\'s chart puts retinaPort in the agent\'s config; ours: config.apiServer.port (retinaPort)'),
  'daemonset.telemetryInterval': drop(telemetry),
  volumeMounts: drop('ours mounts bpffs and BTF (and tracefs/debugfs with agent.linux.mounts)', true),
  volumeMounts_win: drop('ours mounts the Windows config itself', true),
  'securityContext.privileged': drop('ours is never privileged'),
  'securityContext.capabilities': drop('ours adds BPF, PERFMON, NET_ADMIN, NET_RAW and drops the rest (agent.linux.capabilities)', true),
  'securityContext.windowsOptions.runAsUserName': same('agent.windows.runAsUserName'),
  priorityClassName: both('priorityClassName'),
  'service.type': drop('ours is a headless Service (clusterIP: None): the agents use the host network'),
  'service.port': drop('ours: the Service port is the agent\'s port, config.apiServer.port (retinaPort)'),
  'service.targetPort': drop('ours: the Service port is the agent\'s port, config.apiServer.port (retinaPort)'),
  'service.name': same('service.name'),
  operatorService: drop('ours has no operator Service: monitoring.operatorPodMonitor scrapes the operator', true),
  'serviceAccount.name': same('agent.serviceAccount.name'),
  'serviceAccount.create': same('agent.serviceAccount.create'),
  'serviceAccount.annotations': drop('ours sets no ServiceAccount annotations', true),
  'serviceAccount.automount': drop('ours always mounts the agent\'s token (it reads the API server)'),
  serviceAccounts: drop('Hubble Relay/UI/cert-gen ServiceAccounts: ours has only the relay, with its own', true),
  resources: both('resources'),
  'capture.debug': same('operator.config.captureDebug'),
  'capture.jobNumLimit': same('operator.config.captureJobNumLimit'),
  'capture.hostPathBaseDir': { to: [{ to: 'operator.config.captureHostPathBaseDir', map: (v) => (v ? v : undefined) }] },
  'capture.enableManagedStorageAccount': drop('ours has no managed storage account: a Capture uploads to blobUpload / s3Upload or keeps hostPath'),
  ...Object.fromEntries(['tenantId', 'subscriptionId', 'aadClientId', 'aadClientSecret', 'resourceGroup', 'location', 'managedIdentityClientId']
    .map((k) => [`capture.${k}`, drop('Azure credentials of the managed storage account: not in ours')])),
  nodeSelector: both('nodeSelector'),
  tolerations: both('tolerations'),
  affinity: both('affinity', { map: affinity }),
  readinessProbe: both('readinessProbe', { map: probe }),
  livenessProbe: both('livenessProbe', { map: probe }),
  ...monitor('podMonitor'),
  ...monitor('serviceMonitor'),
  'hubble.enabled': same('hubble.enabled'),
  'hubble.listenAddress': { to: [{ to: 'hubble.port', map: listenPort }] },
  'hubble.eventBufferCapacity': { to: [{ to: 'hubble.maxFlows', map: (v) => Number(v) }] },
  'hubble.eventQueueSize': drop('Cilium\'s event queue: ours hands flows over in batches'),
  'hubble.socketPath': drop('ours serves no Hubble socket unless config.hubble.socketPath is set'),
  'hubble.relay.enabled': same('hubble.relay.enabled'),
  'hubble.relay.image': {
    to: [{ to: 'hubble.relay.image', map: (v) => {
      const i = v as { repository?: string; tag?: string; override?: string | null };
      return i.override ?? (i.repository ? `${i.repository}${i.tag ? `:${i.tag}` : ''}` : undefined);
    } }],
    subtree: true,
  },
  'hubble.relay.replicas': same('hubble.relay.replicas'),
  'hubble.relay.resources': { to: [{ to: 'hubble.relay.resources', map: probe }] },
  'hubble.relay.nodeSelector': same('hubble.relay.nodeSelector'),
  'hubble.relay.tolerations': same('hubble.relay.tolerations'),
  'hubble.relay.sortBufferLenMax': { to: [{ to: 'hubble.relay.sortBufferLenMax', map: (v) => (v === null || v === undefined ? undefined : Number(v)) }] },
  'hubble.relay.sortBufferDrainTimeout': { to: [{ to: 'hubble.relay.sortBufferDrainTimeout', map: (v) => (v === null || v === undefined ? undefined : String(v)) }] },
  'hubble.relay.tls.client': drop('ours takes the relay\'s client certificate from a Secret: hubble.relay.tls.client.existingSecret, or made by the chart (hubble.tls.auto)', true),
  'hubble.relay.tls.server': drop('ours serves the relay in plaintext inside the cluster (TLS is between the relay and the agents)', true),
  ...Object.fromEntries(['rollOutPods', 'affinity', 'topologySpreadConstraints', 'extraEnv', 'annotations', 'podAnnotations', 'podLabels', 'podDisruptionBudget',
    'priorityClassName', 'terminationGracePeriodSeconds', 'updateStrategy', 'extraVolumes', 'extraVolumeMounts', 'podSecurityContext', 'securityContext', 'service',
    'listenHost', 'listenPort', 'grpcHealthPort', 'dialTimeout', 'retryTimeout', 'prometheus', 'gops', 'pprof']
    .map((k) => [`hubble.relay.${k}`, drop(RELAY, true)])),
  'hubble.tls.enabled': same('hubble.tls.enabled'),
  'hubble.tls.auto.enabled': same('hubble.tls.auto.enabled'),
  // Cilium's cronJob (certgen at install and on a schedule) becomes ours helm (the chart makes them at install and renews them at upgrades).
  'hubble.tls.auto.method': { to: [{ to: 'hubble.tls.auto.method', map: (v) => (v === 'certmanager' ? 'certmanager' : 'helm') }] },
  'hubble.tls.auto.certValidityDuration': { to: [{ to: 'hubble.tls.auto.certValidityDuration', map: (v) => Number(v) }] },
  'hubble.tls.auto.certManagerIssuerRef': same('hubble.tls.auto.certManagerIssuerRef'),
  'hubble.tls.auto.schedule': drop('ours renews the chart-made certificates at each upgrade (hubble.tls.auto.method helm), or cert-manager does'),
  'hubble.tls.server.extraDnsNames': same('hubble.tls.server.extraDnsNames'),
  'hubble.tls.server.extraIpAddresses': same('hubble.tls.server.extraIpAddresses'),
  'hubble.tls.server.cert': drop('ours takes the agents\' certificate from a Secret: hubble.tls.server.existingSecret'),
  'hubble.tls.server.key': drop('ours takes the agents\' certificate from a Secret: hubble.tls.server.existingSecret'),
  'hubble.annotations': drop('ours sets no annotations on the Hubble peer Service', true),
  'hubble.preferIpv6': drop('ours announces the node\'s address as the agent sees it'),
  'hubble.skipUnknownCGroupIDs': drop('Cilium\'s cgroup filter: ours reads no cgroups'),
  // Retina's Hubble chart has Cilium's older layout: the file size and backups beside static and dynamic.
  'hubble.export.fileMaxSizeMb': same('hubble.export.static.fileMaxSizeMb'),
  'hubble.export.fileMaxBackups': same('hubble.export.static.fileMaxBackups'),
  ...Object.fromEntries(['enabled', 'filePath', 'fieldMask', 'allowList', 'denyList'].map((k) => [`hubble.export.static.${k}`, same(`hubble.export.static.${k}`)])),
  'hubble.export.dynamic': { to: [{ to: 'hubble.export.dynamic' }], subtree: true },
  certgen: drop('Cilium\'s certgen job: ours makes Hubble\'s certificates in the chart or with cert-manager (hubble.tls.auto.method)', true),
  tls: drop('Cilium\'s tls.ca / tls.secretsBackend: ours keeps its Hubble CA in <fullname>-hubble-ca (hubble.tls.auto.method helm) or leaves it to cert-manager', true),
  'hubble.relay': drop(RELAY, true),
  'hubble.metrics.enabled': { to: [{ to: 'hubble.metrics.enabled', map: (v) => (Array.isArray(v) && v.length ? v.map(String) : undefined) }] },
  'hubble.metrics.port': same('hubble.metrics.port'),
  'hubble.metrics.enableOpenMetrics': drop('ours serves the Prometheus text format on hubble.metrics.port (no OpenMetrics exemplars)'),
  'hubble.metrics.serviceAnnotations': drop('ours annotates the <fullname>-hubble-metrics Service for Prometheus itself'),
  'hubble.metrics.serviceMonitor': drop('ours makes no ServiceMonitor for hubble_*: its Service carries prometheus.io/scrape and prometheus.io/port', true),
  'hubble.metrics.dashboards': drop('ours ships no Hubble dashboards: import Cilium\'s (docs/hubble.md#ciliums-hubble-dashboards)', true),
  'hubble.metrics.tls': drop('ours serves hubble_* in plaintext', true),
  'hubble.ui': drop('ours deploys no Hubble UI: install Cilium\'s hubble-ui against our relay', true),
  'hubble.tls': drop('a Cilium Hubble TLS setting ours does not have', true),
  'hubble.peerService': drop('ours names its peer Service <fullname>-hubble-peer', true),
  'hubble.redact': drop('ours redacts nothing (flows carry no HTTP/Kafka payloads)', true),
  hubble: drop('a Cilium Hubble setting ours does not have', true),
};

export interface Unmapped {
  readonly key: string;
  readonly why: string;
}

export interface Converted {
  readonly values: Values;
  readonly unmapped: readonly Unmapped[];
}

export interface ConvertOptions {
  /** Plugins this project has per OS: others are left out of enabledPlugin, and named. */
  readonly plugins: { readonly linux: readonly string[]; readonly windows: readonly string[] };
}

const isMap = (v: unknown): v is Values => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The rule for a dotted path: itself, or the nearest subtree rule above it. */
export function ruleFor(path: string): { key: string; rule: RetinaKey } | undefined {
  const own = RETINA_KEYS[path];
  if (own) return { key: path, rule: own };
  const parts = path.split('.');
  for (let n = parts.length - 1; n > 0; n--) {
    const k = parts.slice(0, n).join('.');
    const r = RETINA_KEYS[k];
    if (r?.subtree) return { key: k, rule: r };
  }
  return undefined;
}

/** The leaves of a values tree as [dotted path, value]; a map with a rule of its own is one leaf. */
function leaves(v: Values, prefix = ''): [string, unknown][] {
  return Object.entries(v).flatMap(([k, x]): [string, unknown][] => {
    const p = prefix + k;
    const own = RETINA_KEYS[p];
    if (isMap(x) && Object.keys(x).length > 0 && !(own && !own.subtree)) {
      if (own?.subtree && own.to) return [[p, x]];
      return leaves(x, `${p}.`);
    }
    return [[p, x]];
  });
}

export function setPath(out: Values, path: string, v: unknown): void {
  const parts = path.split('.');
  let o = out;
  for (const p of parts.slice(0, -1)) {
    if (!isMap(o[p])) o[p] = {};
    o = o[p] as Values;
  }
  o[parts[parts.length - 1] as string] = v;
}

/** Retina's values (merged or an override file) to ours: every key mapped or named with the reason. */
export function convertRetinaValues(retina: Values, opts: ConvertOptions): Converted {
  const values: Values = {};
  const unmapped: Unmapped[] = [];
  for (const [path, v] of leaves(retina)) {
    const hit = ruleFor(path);
    if (!hit) {
      unmapped.push({ key: path, why: 'not a key of Retina\'s standard or Hubble chart' });
      continue;
    }
    const { rule } = hit;
    if (!rule.to) {
      unmapped.push({ key: path, why: rule.why ?? 'not mapped' });
      continue;
    }
    let any = false;
    for (const t of rule.to) {
      let x = t.map ? t.map(v, retina) : v;
      if (x === undefined || x === null) continue;
      if (t.to.endsWith('.enabledPlugin')) {
        const os = t.to.startsWith('agent.linux') ? 'linux' : 'windows';
        const list = x as string[];
        const missing = list.filter((p) => !opts.plugins[os].includes(p));
        for (const p of missing) unmapped.push({ key: `${path}[${p}]`, why: `ours has no ${p} plugin on ${os} (ours: ${opts.plugins[os].join(', ')})` });
        x = list.filter((p) => opts.plugins[os].includes(p));
      }
      setPath(values, t.to, x);
      any = true;
    }
    if (!any) unmapped.push({ key: path, why: rule.why ?? 'its value is the default here' });
  }
  return { values, unmapped };
}

/**
 * Retina's keys that are not keys of this chart, for the chart's own check (a Retina values file given
 * to `helm install` stops with the key, ours, and the command). Top-level keys and nested ones.
 */
export function foreignRetinaKeys(isOurs: (path: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, r] of Object.entries(RETINA_KEYS)) {
    if (isOurs(k)) continue;
    const to = r.to?.map((t) => t.to).join(' and ');
    out[k] = to ? `ours is ${to}` : `not mapped: ${r.why ?? ''}`;
  }
  return out;
}
