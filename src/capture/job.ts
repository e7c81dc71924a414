/**
 * Capture + its resolved target nodes -> one Job per node (Retina's shape, pkg/capture/crd_to_job.go)
 * and the Secrets a CLI capture creates from its flags. Pure: the operator and the CLI both call it
 * and write what it returns. The env contract is the one `retina-capture` decodes (src/capture/env.ts).
 */
import type { CaptureSpec } from '../k8s/index.js';
import {
  DEFAULT_MAX_CAPTURE_SIZE_MB, andAll, captureDurationMs, captureRunMs, compileFilters, goDuration, hostsFilter, netshFilter, resolveHostPath, srcDstFilter, tcpdumpFlags,
} from './spec.js';
import { resolveTrigger } from './trigger.js';

export const CAPTURE_APP_LABEL = 'retina.sh/app';
export const CAPTURE_APP_VALUE = 'capture';
export const CAPTURE_NAME_LABEL = 'capture-name';
export const HOSTPATH_ANNOTATION = 'retina-capture-hostpath';
export const FILENAME_ANNOTATION = 'retina-capture-filename';
export const CAPTURE_CONTAINER = 'retina-capture';
/**
 * The ServiceAccount capture pods run as when their namespace has it (the operator creates it, bound
 * to the chart's capture ClusterRole): it lets a pod annotate itself with its tarball's name.
 */
export const CAPTURE_SERVICE_ACCOUNT = 'retina-capture';
export const BLOB_SECRET_KEY = 'blob-upload-url';
export const S3_ACCESS_KEY_ID = 's3-access-key-id';
export const S3_SECRET_ACCESS_KEY = 's3-secret-access-key';
export const BLOB_SECRET_DIR = '/etc/blob-upload-secret';
export const S3_SECRET_DIR = '/etc/s3-upload-secret';
export const PVC_MOUNT_LINUX = '/mnt/azure';
export const PVC_MOUNT_WINDOWS = 'D:';
export const DEFAULT_HOSTPATH_BASE_DIR = '/var/log/retina/captures';
/** The image `make image` builds (charts/retina/values.yaml image.linux/windows.repository). */
export const DEFAULT_IMAGE_REPOSITORY = 'ghcr.io/retina-ts/retina-ts';
export const DEFAULT_WINDOWS_IMAGE_REPOSITORY = 'ghcr.io/retina-ts/retina-ts-windows';
/** How the images start the workload (hack/image: the bundle beside node). */
export const LINUX_COMMAND = ['/usr/local/bin/node', '/app/retina-capture.mjs'];
/**
 * Windows HostProcess: the image's files and the volume mounts are under $env:CONTAINER_SANDBOX_MOUNT_POINT
 * (as the chart's Windows agent starts), so the Secrets' files are found from there too.
 */
export const WINDOWS_COMMAND = [
  'powershell.exe', '-NoLogo', '-NoProfile', '-NonInteractive', '-Command',
  '$env:RETINA_CAPTURE_SECRETS_ROOT = $env:CONTAINER_SANDBOX_MOUNT_POINT; & "$env:CONTAINER_SANDBOX_MOUNT_POINT/retina-ts/node.exe" "$env:CONTAINER_SANDBOX_MOUNT_POINT/retina-ts/retina-capture.mjs"; exit $LASTEXITCODE',
];
/** Retina's termination grace: the workload finishes and uploads the tarball after SIGTERM. */
export const TERMINATION_GRACE_SECONDS = 1800;

export type NodeOs = 'linux' | 'windows';

export interface TargetNode {
  readonly name: string;
  readonly os: NodeOs;
  /** Pod targets only: the target pods' IPs on this node (IPv4 and IPv6). Undefined for node targets. */
  readonly podIPs?: readonly string[];
}

export interface OwnerRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

export interface TranslateOptions {
  readonly linuxImage: string;
  readonly windowsImage: string;
  readonly hostPathBaseDir: string;
  /** 0 = no limit. */
  readonly jobNumLimit: number;
  /** RFC 3339 UTC start of the capture (same for every node). */
  readonly startTimestamp: string;
  /** The Capture, when the operator creates the Jobs (garbage collection follows it). */
  readonly owner?: OwnerRef;
  /** Extra seconds beyond the capture duration before a Job is failed (activeDeadlineSeconds). */
  readonly deadlineSlackSeconds: number;
  readonly serviceAccountName?: string;
  readonly apiServer?: string;
}

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name?: string; generateName?: string; namespace: string; labels: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: unknown[] };
  [k: string]: unknown;
}

export class JobNumLimitError extends Error {
  override readonly name = 'JobNumLimitError';
  constructor(readonly wanted: number, readonly limit: number) {
    super(`the capture needs ${wanted} jobs (one per node), more than the limit of ${limit} (captureJobNumLimit / --job-num-limit)`);
  }
}

/**
 * A triggered capture targets a Windows node: refused before any Job is made (the workload's PktMon
 * provider has no pre-trigger stream yet, docs/capture.md#windows).
 */
export class TriggerOnWindowsError extends Error {
  override readonly name = 'TriggerOnWindowsError';
  constructor(readonly nodes: readonly string[]) {
    super(`spec.captureConfiguration.trigger: triggered captures run on Linux nodes only; Windows target node(s) ${nodes.join(', ')} (narrow the targets, e.g. --node-selectors kubernetes.io/os=linux)`);
  }
}

export function captureLabels(captureName: string): Record<string, string> {
  return { [CAPTURE_APP_LABEL]: CAPTURE_APP_VALUE, [CAPTURE_NAME_LABEL]: captureName };
}

/** `retina.sh/app=capture,capture-name=<name>` (or every capture's Jobs without a name). */
export function captureSelector(captureName?: string): string {
  return captureName ? `${CAPTURE_APP_LABEL}=${CAPTURE_APP_VALUE},${CAPTURE_NAME_LABEL}=${captureName}` : `${CAPTURE_APP_LABEL}=${CAPTURE_APP_VALUE}`;
}

export function defaultImages(version: string, env: Readonly<Record<string, string | undefined>>, debug: boolean): { linuxImage: string; windowsImage: string } {
  // As Retina: with debug, RETINA_AGENT_IMAGE names the image to run.
  const override = debug ? env['RETINA_AGENT_IMAGE'] : undefined;
  return {
    linuxImage: override || `${DEFAULT_IMAGE_REPOSITORY}:${version}`,
    windowsImage: override || `${DEFAULT_WINDOWS_IMAGE_REPOSITORY}:${version}`,
  };
}

/** The TCPDUMP_FILTER of one node: filters, the node's target pod IPs, source/destination IPs. */
export function nodeTcpdumpFilter(spec: CaptureSpec, node: TargetNode): string {
  const cc = spec.captureConfiguration;
  const o = cc.captureOption ?? {};
  return andAll([
    node.podIPs ? hostsFilter(node.podIPs) : '',
    compileFilters(cc.filters?.include, cc.filters?.exclude),
    srcDstFilter(o.sourceIPs, o.destinationIPs),
  ]);
}

function env(name: string, value: string): { name: string; value: string } {
  return { name, value };
}

function fieldEnv(name: string, path: string): unknown {
  return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: path } } };
}

/** The Job for one node. */
export function nodeJob(capture: { name: string; namespace: string; spec: CaptureSpec }, node: TargetNode, o: TranslateOptions): Manifest {
  const { spec } = capture;
  const cc = spec.captureConfiguration;
  const opt = cc.captureOption ?? {};
  const out = spec.outputConfiguration;
  const windows = node.os === 'windows';
  const labels = captureLabels(capture.name);
  const hostPath = out.hostPath !== undefined ? resolveHostPath(o.hostPathBaseDir, out.hostPath) : undefined;
  const durationMs = captureDurationMs(spec);
  const envs: unknown[] = [
    env('CAPTURE_NAME', capture.name),
    fieldEnv('NODE_HOST_NAME', 'spec.nodeName'),
    fieldEnv('POD_NAME', 'metadata.name'),
    fieldEnv('POD_NAMESPACE', 'metadata.namespace'),
    env('CAPTURE_START_TIMESTAMP', o.startTimestamp),
    env('CAPTURE_DURATION', goDuration(durationMs)),
    env('CAPTURE_MAX_SIZE', String(opt.maxCaptureSize ?? DEFAULT_MAX_CAPTURE_SIZE_MB)),
    env('CAPTURE_FILE_COUNT', String(opt.fileCount ?? 0)),
    env('CAPTURE_PACKET_SIZE', String(opt.packetSize ?? 0)),
    env('CAPTURE_INTERFACES', (opt.interfaces ?? []).join(',')),
    env('INCLUDE_METADATA', String(cc.includeMetadata ?? true)),
    env('TCPDUMP_FILTER', nodeTcpdumpFilter(spec, node)),
    env('TCPDUMP_RAW_FILTER', cc.tcpdumpFilter ?? ''),
    env('PCAP_FILTER', opt.pcapFilter ?? ''),
    env('TCPDUMP_FLAGS', tcpdumpFlags(spec).join(' ')),
    env('NETSH_FILTER', node.podIPs ? netshFilter(node.podIPs) : ''),
  ];
  const volumes: unknown[] = [];
  const mounts: unknown[] = [];
  if (hostPath !== undefined) {
    envs.push(env('HOSTPATH', hostPath), env('RETINA_CAPTURE_HOSTPATH_BASE_DIR', o.hostPathBaseDir));
    volumes.push({ name: 'hostpath', hostPath: { path: hostPath, type: 'DirectoryOrCreate' } });
    mounts.push({ name: 'hostpath', mountPath: hostPath });
  }
  if (out.persistentVolumeClaim) {
    const at = windows ? PVC_MOUNT_WINDOWS : PVC_MOUNT_LINUX;
    envs.push(env('PERSISTENT_VOLUME_CLAIM', at));
    volumes.push({ name: 'pvc', persistentVolumeClaim: { claimName: out.persistentVolumeClaim } });
    mounts.push({ name: 'pvc', mountPath: at });
  }
  if (out.blobUpload) {
    volumes.push({ name: 'blob-upload-secret', secret: { secretName: out.blobUpload } });
    mounts.push({ name: 'blob-upload-secret', mountPath: BLOB_SECRET_DIR, readOnly: true });
  }
  if (out.s3Upload) {
    const s3 = out.s3Upload;
    envs.push(env('S3_ENDPOINT', s3.endpoint ?? ''), env('S3_REGION', s3.region ?? ''), env('S3_BUCKET', s3.bucket), env('S3_PATH', s3.path ?? ''));
    if (s3.secretName) {
      volumes.push({ name: 's3-upload-secret', secret: { secretName: s3.secretName } });
      mounts.push({ name: 's3-upload-secret', mountPath: S3_SECRET_DIR, readOnly: true });
    }
  }
  if (o.apiServer) envs.push(env('APISERVER', o.apiServer));
  if (cc.trigger) {
    // The workload reads the trigger back with the same validator (CAPTURE_TRIGGER.<field>), defaults resolved here once.
    const t = resolveTrigger(cc.trigger);
    envs.push(env('CAPTURE_TRIGGER', JSON.stringify(cc.trigger)));
    const sock = /^unix:\/\/(\/.*)\/[^/]+$/.exec(t.hubbleAddress);
    if (sock) {
      // The agent's Hubble socket (hubble.socketPath): its folder from the host.
      volumes.push({ name: 'hubble-socket', hostPath: { path: sock[1], type: 'Directory' } });
      mounts.push({ name: 'hubble-socket', mountPath: sock[1], readOnly: true });
    }
  }

  const container: Record<string, unknown> = {
    name: CAPTURE_CONTAINER,
    image: windows ? o.windowsImage : o.linuxImage,
    imagePullPolicy: 'IfNotPresent',
    command: windows ? WINDOWS_COMMAND : LINUX_COMMAND,
    env: envs,
    resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { cpu: '100m', memory: '300Mi' } },
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'FallbackToLogsOnError',
    volumeMounts: mounts,
  };
  const podSpec: Record<string, unknown> = {
    nodeName: node.name,
    hostNetwork: true,
    restartPolicy: 'Never',
    terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
    nodeSelector: { 'kubernetes.io/os': node.os },
    tolerations: [
      { key: 'CriticalAddonsOnly', operator: 'Exists' },
      { operator: 'Exists', effect: 'NoExecute' },
      { operator: 'Exists', effect: 'NoSchedule' },
    ],
    containers: [container],
    volumes,
  };
  if (o.serviceAccountName) podSpec['serviceAccountName'] = o.serviceAccountName;
  if (windows) {
    podSpec['securityContext'] = { windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' } };
  } else {
    podSpec['hostIPC'] = true;
    container['securityContext'] = { runAsUser: 0, capabilities: { add: ['NET_ADMIN', 'NET_RAW', 'SYS_ADMIN'] } };
  }
  const annotations: Record<string, string> = hostPath !== undefined ? { [HOSTPATH_ANNOTATION]: hostPath } : {};
  const job: Manifest = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { generateName: `${capture.name}-`, namespace: capture.namespace, labels: { ...labels }, annotations: { ...annotations } },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: Math.ceil(captureRunMs(spec) / 1000) + o.deadlineSlackSeconds,
      template: { metadata: { labels: { ...labels }, annotations }, spec: podSpec },
    },
  };
  if (o.owner) job.metadata.ownerReferences = [{ ...o.owner, controller: true, blockOwnerDeletion: true }];
  return job;
}

/** One Job per node; JobNumLimitError when the limit is exceeded, TriggerOnWindowsError for a trigger on Windows nodes (nothing is to be created then). */
export function captureJobs(capture: { name: string; namespace: string; spec: CaptureSpec }, nodes: readonly TargetNode[], o: TranslateOptions): Manifest[] {
  if (o.jobNumLimit > 0 && nodes.length > o.jobNumLimit) throw new JobNumLimitError(nodes.length, o.jobNumLimit);
  const windows = nodes.filter((n) => n.os === 'windows').map((n) => n.name);
  if (capture.spec.captureConfiguration.trigger && windows.length) throw new TriggerOnWindowsError(windows);
  return [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((n) => nodeJob(capture, n, o));
}

export interface SecretValues {
  readonly blobUploadUrl?: string;
  readonly s3AccessKeyId?: string;
  readonly s3SecretAccessKey?: string;
}

/**
 * The Secrets a CLI capture creates from its flags (SAS URL, S3 keys), labelled as the capture's so
 * `delete` finds them; the spec then names them (blobUpload, s3Upload.secretName).
 */
export function captureSecrets(captureName: string, namespace: string, v: SecretValues, owner?: OwnerRef): { blob?: Manifest; s3?: Manifest } {
  const meta = (suffix: string): Manifest['metadata'] => ({
    name: `${captureName}-${suffix}`, namespace, labels: captureLabels(captureName),
    ...(owner ? { ownerReferences: [{ ...owner, controller: true, blockOwnerDeletion: true }] } : {}),
  });
  const out: { blob?: Manifest; s3?: Manifest } = {};
  if (v.blobUploadUrl) out.blob = { apiVersion: 'v1', kind: 'Secret', metadata: meta('blob-upload-secret'), type: 'Opaque', stringData: { [BLOB_SECRET_KEY]: v.blobUploadUrl } };
  if (v.s3AccessKeyId || v.s3SecretAccessKey) {
    out.s3 = {
      apiVersion: 'v1', kind: 'Secret', metadata: meta('s3-upload-secret'), type: 'Opaque',
      stringData: { [S3_ACCESS_KEY_ID]: v.s3AccessKeyId ?? '', [S3_SECRET_ACCESS_KEY]: v.s3SecretAccessKey ?? '' },
    };
  }
  return out;
}

/** The Secrets a Job's pod mounts (by name). */
export function referencedSecrets(job: { spec?: { template?: { spec?: { volumes?: { secret?: { secretName?: string } }[] } } } }): string[] {
  return (job.spec?.template?.spec?.volumes ?? []).map((v) => v.secret?.secretName).filter((x): x is string => Boolean(x));
}
