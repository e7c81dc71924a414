/**
 * The operator's keys: Retina's (operator/config/config.go) plus ours, documented in the README.
 * Read from --config YAML and RETINA_<KEY> like the agent's.
 */
import { InvalidValue, boolKey, durationKey, enumKey, intKey, listKey, metricsSecurityConfig, metricsSecurityKeys, stringKey, type ConfigSpec, type KeySpec, type LoadedValues, type MetricsSecurityConfig } from '../config/index.js';
import { LOG_LEVELS, type LogLevel } from '../log/index.js';
import { DEFAULT_HOSTPATH_BASE_DIR, DEFAULT_IMAGE_REPOSITORY, DEFAULT_WINDOWS_IMAGE_REPOSITORY } from '../capture/index.js';

/** A string key whose value must be an absolute path (Retina: captureHostPathBaseDir). */
function absolutePathKey(key: string, def: string, doc: string): KeySpec<string> {
  const base = stringKey(key, def, doc, { nonEmpty: true });
  return {
    ...base,
    allowed: 'an absolute path',
    parse(raw) {
      const s = base.parse(raw);
      if (!s.startsWith('/') || s.split('/').includes('..')) throw new InvalidValue();
      return s;
    },
  };
}

export interface OperatorConfig {
  readonly installCRDs: boolean;
  readonly enableRetinaEndpoint: boolean;
  /** Also write RetinaEndpointSlices (agents with retinaEndpointSlices read them). */
  readonly retinaEndpointSlices: boolean;
  readonly retinaEndpointSliceMaxSize: number;
  readonly remoteContext: boolean;
  readonly logLevel: LogLevel;
  readonly metricsAddr: string;
  readonly probeAddr: string;
  readonly enableLeaderElection: boolean;
  readonly leaderElectionNamespace: string;
  readonly leaderElectionId: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly retinaEndpointLabels: readonly string[];
  readonly retinaEndpointAnnotations: readonly string[];
  readonly workers: number;
  readonly queueQps: number;
  readonly queueBurst: number;
  readonly resyncPeriodMs: number;
  readonly shutdownTimeoutMs: number;
  /** TLS and Kubernetes auth of metricsAddr's /metrics (off by default); the probes stay plain HTTP. */
  readonly metricsSecurity: MetricsSecurityConfig;
  readonly captureJobNumLimit: number;
  readonly captureHostPathBaseDir: string;
  readonly captureDebug: boolean;
  readonly captureImage: string;
  readonly captureWindowsImage: string;
  readonly captureDeadlineSlackMs: number;
  readonly captureServiceAccountClusterRole: string;
}

export const DEFAULT_LABEL_ALLOWLIST: readonly string[] = [
  'app', 'app.kubernetes.io/*', 'k8s-app', 'component', 'tier', 'version', 'name',
];

export function operatorKeys() {
  return {
    installCRDs: boolKey('installCRDs', false, 'Create or update the retina.sh CRDs at start (charts/retina/crds).'),
    enableRetinaEndpoint: boolKey('enableRetinaEndpoint', true, 'Convert Pods into RetinaEndpoints (with remoteContext).'),
    retinaEndpointSlices: boolKey('retinaEndpointSlices', false, 'Ours: also pack the endpoint pods into RetinaEndpointSlices (per namespace, up to retinaEndpointSliceMaxSize each), which agents with retinaEndpointSlices watch instead of RetinaEndpoints: for big clusters (the chart sets it from config.retinaEndpointSlices).'),
    retinaEndpointSliceMaxSize: intKey('retinaEndpointSliceMaxSize', 20, 'Ours: most pods in one RetinaEndpointSlice (20: most of what slices save on a sync, at 4x the bytes of a RetinaEndpoint per change; 100: 23 kB per change).', { min: 1, max: 1000 }),
    remoteContext: boolKey('remoteContext', false, 'Agents use remote context; the operator then maintains RetinaEndpoints.'),
    logLevel: enumKey<LogLevel>('logLevel', 'info', LOG_LEVELS, 'Log level.'),
    metricsAddr: stringKey('metricsAddr', ':8080', 'Address of /metrics (host:port; empty host = all addresses).', { nonEmpty: true }),
    probeAddr: stringKey('probeAddr', ':8081', 'Address of /healthz and /readyz.', { nonEmpty: true }),
    enableLeaderElection: boolKey('enableLeaderElection', true, 'Ours: elect one active replica through a Lease (Retina: off). Off: this replica always works.'),
    leaderElectionNamespace: stringKey('leaderElectionNamespace', 'kube-system', 'Namespace of the leader-election Lease.', { nonEmpty: true }),
    leaderElectionId: stringKey('leaderElectionId', '16937e39.retina.sh', 'Name of the leader-election Lease (Retina\'s ID).', { nonEmpty: true }),
    leaseDuration: durationKey('leaseDuration', 15_000, 'How long a leader\'s lease lasts without renewal.', { minMs: 1000 }),
    renewDeadline: durationKey('renewDeadline', 10_000, 'A leader that cannot renew for this long steps down.', { minMs: 500 }),
    retryPeriod: durationKey('retryPeriod', 2_000, 'How often candidates try and the leader renews.', { minMs: 100 }),
    retinaEndpointLabels: listKey('retinaEndpointLabels', DEFAULT_LABEL_ALLOWLIST, 'Ours: Pod label keys copied to RetinaEndpoints (exact, or a prefix ending in *).'),
    retinaEndpointAnnotations: listKey('retinaEndpointAnnotations', ['retina.sh'], 'Ours: Pod annotation keys copied to RetinaEndpoints.'),
    workers: intKey('workers', 16, 'Ours: concurrent reconciles (async: a few slow API calls must not stall the queue).', { min: 1, max: 256 }),
    queueQps: intKey('queueQps', 100, 'Ours: retries per second allowed by the work queue\'s global bucket.', { min: 1, max: 100_000 }),
    queueBurst: intKey('queueBurst', 200, 'Ours: burst of the work queue\'s global bucket.', { min: 1, max: 100_000 }),
    resyncPeriod: durationKey('resyncPeriod', 600_000, 'Ours: every key is reconciled again this often (level-triggered safety net).', { minMs: 1000 }),
    shutdownTimeout: durationKey('shutdownTimeout', 8_000, 'Ours: how long stopping may take on SIGTERM.', { minMs: 100 }),
    ...metricsSecurityKeys(),
    captureJobNumLimit: intKey('captureJobNumLimit', 0, 'Most capture Jobs (target nodes) one Capture may create; 0 = no limit.', { min: 0, max: 100_000 }),
    captureHostPathBaseDir: absolutePathKey('captureHostPathBaseDir', DEFAULT_HOSTPATH_BASE_DIR, 'Host directory under which a Capture\'s outputConfiguration.hostPath lives.'),
    captureDebug: boolKey('captureDebug', false, 'Capture Jobs run the image named by RETINA_AGENT_IMAGE (as Retina\'s debug mode).'),
    captureImage: stringKey('captureImage', '', `Ours: the Linux capture image (default ${DEFAULT_IMAGE_REPOSITORY}:<version>).`),
    captureWindowsImage: stringKey('captureWindowsImage', '', `Ours: the Windows capture image (default ${DEFAULT_WINDOWS_IMAGE_REPOSITORY}:<version>).`),
    captureServiceAccountClusterRole: stringKey('captureServiceAccountClusterRole', '', 'Ours: a ClusterRole (pods get/patch) bound to a ServiceAccount retina-capture in each capture namespace, which the capture pods run as (so they can annotate their own pod); empty: the namespace\'s default ServiceAccount.'),
    captureDeadlineSlack: durationKey('captureDeadlineSlack', 300_000, 'Ours: a capture Job still running this long after its duration is failed (activeDeadlineSeconds).', { minMs: 1000 }),
  } satisfies ConfigSpec<Record<string, unknown>>;
}

export type OperatorKeys = ReturnType<typeof operatorKeys>;

export function operatorConfig(keys: OperatorKeys, v: LoadedValues): OperatorConfig {
  return Object.freeze({
    installCRDs: v.get(keys.installCRDs),
    enableRetinaEndpoint: v.get(keys.enableRetinaEndpoint),
    retinaEndpointSlices: v.get(keys.retinaEndpointSlices),
    retinaEndpointSliceMaxSize: v.get(keys.retinaEndpointSliceMaxSize),
    remoteContext: v.get(keys.remoteContext),
    logLevel: v.get(keys.logLevel),
    metricsAddr: v.get(keys.metricsAddr),
    probeAddr: v.get(keys.probeAddr),
    enableLeaderElection: v.get(keys.enableLeaderElection),
    leaderElectionNamespace: v.get(keys.leaderElectionNamespace),
    leaderElectionId: v.get(keys.leaderElectionId),
    leaseDurationMs: v.get(keys.leaseDuration),
    renewDeadlineMs: v.get(keys.renewDeadline),
    retryPeriodMs: v.get(keys.retryPeriod),
    retinaEndpointLabels: Object.freeze([...v.get(keys.retinaEndpointLabels)]),
    retinaEndpointAnnotations: Object.freeze([...v.get(keys.retinaEndpointAnnotations)]),
    workers: v.get(keys.workers),
    queueQps: v.get(keys.queueQps),
    queueBurst: v.get(keys.queueBurst),
    resyncPeriodMs: v.get(keys.resyncPeriod),
    shutdownTimeoutMs: v.get(keys.shutdownTimeout),
    metricsSecurity: metricsSecurityConfig(keys, v),
    captureJobNumLimit: v.get(keys.captureJobNumLimit),
    captureHostPathBaseDir: v.get(keys.captureHostPathBaseDir),
    captureDebug: v.get(keys.captureDebug),
    captureImage: v.get(keys.captureImage),
    captureWindowsImage: v.get(keys.captureWindowsImage),
    captureDeadlineSlackMs: v.get(keys.captureDeadlineSlack),
    captureServiceAccountClusterRole: v.get(keys.captureServiceAccountClusterRole),
  });
}

/** ":8080" -> { host: "0.0.0.0", port: 8080 }; "127.0.0.1:0" -> any free port on loopback. */
export function parseAddr(addr: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(addr);
  if (!m) throw new Error(`address ${JSON.stringify(addr)} is not host:port`);
  const host = (m[1] as string).replace(/^\[|\]$/g, '');
  return { host: host || '0.0.0.0', port: Number(m[2]) };
}
