/**
 * `kubectl-retina capture create`: Retina's flags and defaults. Without --use-operator (the default,
 * as Retina) it resolves the targets and creates the Jobs and Secrets itself with the operator's
 * translator; with --use-operator it creates a Capture resource for the operator. --no-wait=false
 * waits, prints per-node progress and then cleans up (as Retina).
 */
import {
  CAPTURE_SERVICE_ACCOUNT, DEFAULT_HOSTPATH_BASE_DIR, TargetError, captureJobs, captureSecrets, captureSelector, referencedSecrets, resolveTargets, validateCaptureSpec,
  captureDurationMs, JobNumLimitError, type Manifest,
} from '../../capture/index.js';
import { apiVersionOf, collectionPath, isApiError, objectPath, resources, type Capture, type CaptureSpec, type KubeList, type LabelSelector, type RestClient } from '../../k8s/index.js';
import { version } from '../command.js';
import { parseFlags, UsageError, type Flags } from '../args.js';
import { withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { NAME_FLAG, connect } from './flags.js';
import { captureImages } from './image.js';
import { deleteCaptureJobs, jobProgress, printProgress } from './list.js';

export const CREATE_USAGE = `usage: kubectl-retina capture create [--name retina-capture] [-n NAMESPACE] [flags] [kubectl's flags: kubectl-retina options]

Targets: --node-names a,b | --node-selectors k=v (default kubernetes.io/os=linux) | --pod-selectors k=v --namespace-selectors k=v | --pod-names ns/pod,...
Capture: --duration 1m --max-size 100 --file-count 0 --packet-size 0 --interfaces eth0 --include-filter/--exclude-filter IP:port,...
  --pcap-filter EXPR --tcpdump-filter EXPR (deprecated) --source-ips --destination-ips --include-metadata=true
  --no-promiscuous --packet-buffered --immediate-mode --no-resolve-dns --no-resolve-port --print-link-header --quiet-output
  --absolute-seq --dont-verify-checksum --verbosity verbose|extra|max --timestamp-format none|unformatted|delta|date|delta-since-first
  --print-data hex|hex-with-link|ascii|ascii-with-link
Outputs: --host-path retina --host-path-base-dir /var/log/retina/captures --pvc NAME --blob-upload SAS_URL
  --s3-bucket B --s3-region R --s3-endpoint URL --s3-path retina/captures --s3-access-key-id ID --s3-secret-access-key KEY
Run: --job-num-limit 0 --no-wait=true --cleanup-after-upload=false --use-operator=false
Image: --image IMAGE (the capture image; default: the image of the agent DaemonSet of the retina-ts chart
  installed in the cluster, else ghcr.io/retina-ts/retina-ts:<version>) --windows-image IMAGE (default: --image,
  else the chart's Windows agent image) --debug=false (as Retina: with --debug, RETINA_AGENT_IMAGE names the image)`;

const STRINGS = {
  ...NAME_FLAG, image: undefined, 'windows-image': undefined,
  duration: '1m', 'max-size': '100', 'file-count': '0', 'packet-size': '0', 'node-names': undefined, 'node-selectors': 'kubernetes.io/os=linux',
  'pod-names': undefined, 'pod-selectors': undefined, 'namespace-selectors': undefined, 'host-path': 'retina', 'host-path-base-dir': DEFAULT_HOSTPATH_BASE_DIR,
  pvc: undefined, 'blob-upload': undefined, 's3-region': undefined, 's3-endpoint': undefined, 's3-bucket': undefined, 's3-path': 'retina/captures',
  's3-access-key-id': undefined, 's3-secret-access-key': undefined, 'tcpdump-filter': undefined, 'pcap-filter': undefined, 'source-ips': undefined,
  'destination-ips': undefined, interfaces: undefined, verbosity: undefined, 'timestamp-format': undefined, 'print-data': undefined,
  'exclude-filter': undefined, 'include-filter': undefined, 'job-num-limit': '0', 'poll-interval': '5s',
};
const BOOLEANS = {
  'no-promiscuous': false, 'packet-buffered': false, 'immediate-mode': false, 'no-resolve-dns': false, 'no-resolve-port': false, 'print-link-header': false,
  'quiet-output': false, 'absolute-seq': false, 'dont-verify-checksum': false, 'include-metadata': true, 'no-wait': true, 'cleanup-after-upload': false,
  debug: false, 'use-operator': false,
};

export const CREATE_FLAGS = { strings: STRINGS, booleans: BOOLEANS };

/** `a=b,c=d` -> matchLabels. */
function labels(flag: string, text: string): LabelSelector {
  const matchLabels: Record<string, string> = {};
  for (const part of text.split(',').map((x) => x.trim()).filter(Boolean)) {
    const i = part.indexOf('=');
    if (i <= 0) throw new UsageError(`--${flag}: ${JSON.stringify(part)} is not key=value`);
    matchLabels[part.slice(0, i)] = part.slice(i + 1);
  }
  return { matchLabels };
}

export interface CreateInput {
  readonly spec: CaptureSpec;
  readonly secrets: { blobUploadUrl?: string; s3AccessKeyId?: string; s3SecretAccessKey?: string };
  /** Node names given with --node-names (a nodeSelector on kubernetes.io/hostname could not say it). */
  readonly nodeNames: readonly string[];
}

/** Flags -> the in-memory Capture spec (Retina's cli/cmd/capture/create.go rules). */
export function specFromFlags(f: Flags, name: string): CreateInput {
  const nodeNames = f.list('node-names');
  const podNames = f.list('pod-names');
  const podSel = f.str('pod-selectors');
  const nsSel = f.str('namespace-selectors');
  const target: CaptureSpec['captureConfiguration']['captureTarget'] = {};
  if (podNames.length) target.podNames = podNames;
  else if (podSel !== undefined || nsSel !== undefined) {
    target.podSelector = labels('pod-selectors', podSel ?? '');
    target.namespaceSelector = labels('namespace-selectors', nsSel ?? '');
  } else if (nodeNames.length) target.nodeSelector = { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: nodeNames }] };
  else target.nodeSelector = labels('node-selectors', f.str('node-selectors') ?? '');
  const opt: NonNullable<CaptureSpec['captureConfiguration']['captureOption']> = {
    duration: f.str('duration'), maxCaptureSize: f.int('max-size'), packetSize: f.int('packet-size'),
  };
  const fileCount = f.int('file-count');
  if (fileCount > 0) opt.fileCount = fileCount;
  const ifaces = f.list('interfaces');
  if (ifaces.length) opt.interfaces = ifaces;
  if (f.str('pcap-filter')) opt.pcapFilter = f.str('pcap-filter');
  if (f.list('source-ips').length) opt.sourceIPs = f.list('source-ips');
  if (f.list('destination-ips').length) opt.destinationIPs = f.list('destination-ips');
  const bools: [string, keyof typeof opt][] = [
    ['no-promiscuous', 'noPromiscuous'], ['packet-buffered', 'packetBuffered'], ['immediate-mode', 'immediateMode'], ['no-resolve-dns', 'noResolveDNS'],
    ['no-resolve-port', 'noResolvePort'], ['print-link-header', 'printLinkHeader'], ['quiet-output', 'quietOutput'], ['absolute-seq', 'absoluteSeq'],
    ['dont-verify-checksum', 'dontVerifyChecksum'],
  ];
  for (const [flag, key] of bools) if (f.bool(flag)) (opt as Record<string, unknown>)[key] = true;
  if (f.str('verbosity')) opt.verbosity = f.str('verbosity') as typeof opt.verbosity;
  if (f.str('timestamp-format')) opt.timestampFormat = f.str('timestamp-format') as typeof opt.timestampFormat;
  if (f.str('print-data')) opt.printDataFormat = f.str('print-data') as typeof opt.printDataFormat;
  const cc: CaptureSpec['captureConfiguration'] = { captureTarget: target, includeMetadata: f.bool('include-metadata'), captureOption: opt };
  const include = f.list('include-filter');
  const exclude = f.list('exclude-filter');
  if (include.length || exclude.length) cc.filters = { ...(include.length ? { include } : {}), ...(exclude.length ? { exclude } : {}) };
  if (f.str('tcpdump-filter')) cc.tcpdumpFilter = f.str('tcpdump-filter');
  const out: CaptureSpec['outputConfiguration'] = {};
  if (f.str('host-path')) out.hostPath = f.str('host-path');
  if (f.str('pvc')) out.persistentVolumeClaim = f.str('pvc');
  const secrets: CreateInput['secrets'] = {};
  if (f.str('blob-upload')) {
    secrets.blobUploadUrl = f.str('blob-upload');
    out.blobUpload = `${name}-blob-upload-secret`;
  }
  if (f.str('s3-bucket')) {
    out.s3Upload = { bucket: f.str('s3-bucket') as string, path: f.str('s3-path') };
    if (f.str('s3-region')) out.s3Upload.region = f.str('s3-region');
    if (f.str('s3-endpoint')) out.s3Upload.endpoint = f.str('s3-endpoint');
    if (f.str('s3-access-key-id') || f.str('s3-secret-access-key')) {
      secrets.s3AccessKeyId = f.str('s3-access-key-id');
      secrets.s3SecretAccessKey = f.str('s3-secret-access-key');
      out.s3Upload.secretName = `${name}-s3-upload-secret`;
    }
  }
  return { spec: { captureConfiguration: cc, outputConfiguration: out, cleanUpAfterUpload: f.bool('cleanup-after-upload') }, secrets, nodeNames };
}

const out = (s: string): boolean => process.stdout.write(s + '\n');
const err = (s: string): boolean => process.stderr.write(`kubectl-retina capture create: ${s}\n`);

async function createSecrets(client: RestClient, name: string, ns: string, input: CreateInput): Promise<string[]> {
  const s = captureSecrets(name, ns, input.secrets);
  const made: string[] = [];
  for (const m of [s.blob, s.s3].filter((x): x is Manifest => x !== undefined)) {
    await client.request('POST', collectionPath(resources.secrets, ns), { body: m });
    made.push(m.metadata.name as string);
  }
  return made;
}

export async function runCreate(argv: readonly string[], env: NodeJS.ProcessEnv, kubeFlags: KubeFlags = {}): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(CREATE_USAGE);
    return 0;
  }
  let f: Flags;
  let input: CreateInput;
  let kubeArgs: KubeFlags;
  try {
    const split = withKubeFlags(argv, kubeFlags);
    kubeArgs = split.kube;
    f = parseFlags(split.rest, CREATE_FLAGS);
    input = specFromFlags(f, f.str('name') as string);
  } catch (e) {
    err(`${(e as Error).message}\n${CREATE_USAGE}`);
    return 2;
  }
  const name = f.str('name') as string;
  const problems = validateCaptureSpec(input.spec);
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 53) problems.unshift(`--name: ${JSON.stringify(name)} is not a valid capture name (lowercase letters, digits, -; at most 53)`);
  const baseDir = f.str('host-path-base-dir') as string;
  if (!baseDir.startsWith('/')) problems.push(`--host-path-base-dir: ${JSON.stringify(baseDir)} must be absolute`);
  if (problems.length) {
    err(`invalid capture:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    return 2;
  }
  const kube = await connect(kubeArgs, env, 'capture create');
  if (!kube) return 1;
  const ns = kube.namespace;
  const client = kube.client();
  try {
    if (f.bool('use-operator')) {
      const made = await createSecrets(client, name, ns, input);
      const body: Capture = { apiVersion: apiVersionOf(resources.captures), kind: 'Capture', metadata: { name, namespace: ns }, spec: input.spec };
      await client.request('POST', collectionPath(resources.captures, ns), { body });
      out(`capture ${ns}/${name} created (Capture resource; the operator runs it)${made.length ? `; secrets ${made.join(', ')}` : ''}`);
      if (f.bool('no-wait')) return 0;
      return await waitOperator(client, ns, name, captureDurationMs(input.spec), pollMs(f));
    }
    const existing = await client.request<KubeList<unknown>>('GET', collectionPath(resources.jobs, ns), { query: { labelSelector: captureSelector(name), limit: 1 } });
    if (existing.items.length) {
      err(`capture ${ns}/${name} already has jobs; delete it first (kubectl-retina capture delete --name ${name} -n ${ns})`);
      return 1;
    }
    let nodes;
    try {
      nodes = await resolveTargets(client, ns, input.spec);
      if (input.nodeNames.length) {
        const found = new Set(nodes.map((n) => n.name));
        const missing = input.nodeNames.filter((n) => !found.has(n));
        if (missing.length) throw new TargetError(`--node-names: no node ${missing.join(', ')}`);
      }
    } catch (e) {
      if (!(e instanceof TargetError)) throw e;
      err(e.message);
      return 1;
    }
    const images = await captureImages(client, { image: f.str('image'), windowsImage: f.str('windows-image'), debug: f.bool('debug') }, version(), env);
    const os = new Set(nodes.map((n) => n.os));
    if (os.has('linux')) err(`note: capture image ${images.linuxImage} (from ${images.linuxFrom})`);
    if (os.has('windows')) err(`note: Windows capture image ${images.windowsImage} (from ${images.windowsFrom})`);
    const account = await captureAccount(client, ns);
    if (!account) {
      err(`note: no ServiceAccount ${CAPTURE_SERVICE_ACCOUNT} in namespace ${ns}: the capture pods run as the default one and cannot annotate themselves with their file's name, so download lists each node's capture directory (the operator creates that account when it runs a capture in a namespace)`);
    }
    let jobs: Manifest[];
    try {
      jobs = captureJobs({ name, namespace: ns, spec: input.spec }, nodes, {
        linuxImage: images.linuxImage, windowsImage: images.windowsImage, hostPathBaseDir: baseDir, jobNumLimit: f.int('job-num-limit'), deadlineSlackSeconds: 300, ...(account ? { serviceAccountName: account } : {}),
        startTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      });
    } catch (e) {
      if (!(e instanceof JobNumLimitError)) throw e;
      err(e.message);
      return 1;
    }
    const secrets = await createSecrets(client, name, ns, input);
    const created: string[] = [];
    for (const j of jobs) {
      const r = await client.request<{ metadata: { name: string } }>('POST', collectionPath(resources.jobs, ns), { body: j });
      created.push(r.metadata.name);
    }
    out(`capture ${ns}/${name}: ${created.length} job(s) created: ${created.join(', ')}${secrets.length ? `; secrets ${secrets.join(', ')}` : ''}`);
    if (f.bool('no-wait')) return 0;
    return await waitJobs(client, ns, name, captureDurationMs(input.spec), pollMs(f));
  } catch (e) {
    err((e as Error).message);
    return 1;
  } finally {
    client.close();
  }
}

/** The capture ServiceAccount if the namespace has it (and we may see it); undefined otherwise. */
async function captureAccount(client: RestClient, ns: string): Promise<string | undefined> {
  try {
    await client.request('GET', `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/${CAPTURE_SERVICE_ACCOUNT}`);
    return CAPTURE_SERVICE_ACCOUNT;
  } catch (e) {
    if (isApiError(e, 404) || isApiError(e, 403)) return undefined;
    throw e;
  }
}

function pollMs(f: Flags): number {
  const m = /^(\d+)(ms|s|m)$/.exec(f.str('poll-interval') ?? '5s');
  if (!m) return 5000;
  return Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls the capture's Jobs until none is active (or the duration + 5 m passes), then deletes them. */
async function waitJobs(client: RestClient, ns: string, name: string, durationMs: number, every: number): Promise<number> {
  const deadline = Date.now() + durationMs + 300_000;
  let last = '';
  for (;;) {
    const p = await jobProgress(client, ns, name);
    const line = printProgress(p);
    if (line !== last) out(line);
    last = line;
    if (p.active === 0 || Date.now() > deadline) {
      const timedOut = p.active > 0;
      const removed = await deleteCaptureJobs(client, ns, name);
      out(`capture ${ns}/${name}: ${timedOut ? 'timed out; ' : ''}deleted ${removed.jobs} job(s) and ${removed.secrets} secret(s)`);
      return p.failed > 0 || timedOut ? 1 : 0;
    }
    await sleep(every);
  }
}

/** Polls the Capture's status until completionTime, then deletes it (the operator cleans up). */
async function waitOperator(client: RestClient, ns: string, name: string, durationMs: number, every: number): Promise<number> {
  const deadline = Date.now() + durationMs + 300_000;
  let last = '';
  for (;;) {
    const c = await client.request<Capture>('GET', objectPath(resources.captures, ns, name));
    const s = c.status ?? {};
    const n = s.nodeCounts;
    const line = `${name}: ${(s.nodes ?? []).map((x) => `${x.name}=${x.state}`).join(' ') || 'starting'}${n ? ` (pending ${n.pending}, running ${n.running}, completed ${n.completed}, failed ${n.failed}, uploaded ${n.uploaded})` : ''}`;
    if (line !== last) out(line);
    last = line;
    const err = s.conditions?.find((x) => x.type === 'error' && x.status === 'True');
    if (s.completionTime || (err && !s.startTime) || Date.now() > deadline) {
      await client.request('DELETE', objectPath(resources.captures, ns, name));
      out(`capture ${ns}/${name}: ${err ? `${err.reason}: ${err.message}; ` : ''}deleted`);
      return err || !s.completionTime ? 1 : 0;
    }
    await sleep(every);
  }
}

export { referencedSecrets };
