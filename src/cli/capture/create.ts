/**
 * `kubectl-retina capture create`: Retina's flags and defaults, and what it prints. Without
 * --use-operator (the default, as Retina) the capture client (src/capture/client) resolves the targets
 * and creates the Jobs and Secrets itself with the operator's translator; with --use-operator it
 * creates a Capture resource for the operator. --no-wait=false waits, prints per-node progress and
 * then cleans up (as Retina).
 */
import { CAPTURE_SERVICE_ACCOUNT, DEFAULT_HOSTPATH_BASE_DIR, validateCaptureSpec, captureRunMs, describeTrigger, resolveTrigger } from '../../capture/index.js';
import { createCaptureJobs, createCaptureResource, waitForCaptureResource, waitForJobs, type CaptureRequest } from '../../capture/client/index.js';
import type { CaptureSpec, CaptureTrigger, LabelSelector } from '../../k8s/index.js';
import { version } from '../command.js';
import { parseFlags, UsageError, type Flags } from '../args.js';
import { withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { NAME_FLAG, connect } from './flags.js';
import { printProgress } from './list.js';

export const CREATE_USAGE = `usage: kubectl-retina capture create [--name retina-capture] [-n NAMESPACE] [flags] [kubectl's flags: kubectl-retina options]

Targets: --node-names a,b | --node-selectors k=v (default kubernetes.io/os=linux) | --pod-selectors k=v --namespace-selectors k=v | --pod-names ns/pod,...
Capture: --duration 1m --max-size 100 --file-count 0 --packet-size 0 --interfaces eth0 --include-filter/--exclude-filter IP:port,...
  --pcap-filter EXPR --tcpdump-filter EXPR (deprecated) --source-ips --destination-ips --include-metadata=true
  --no-promiscuous --packet-buffered --immediate-mode --no-resolve-dns --no-resolve-port --print-link-header --quiet-output
  --absolute-seq --dont-verify-checksum --verbosity verbose|extra|max --timestamp-format none|unformatted|delta|date|delta-since-first
  --print-data hex|hex-with-link|ascii|ascii-with-link
Outputs: --host-path retina --host-path-base-dir /var/log/retina/captures --pvc NAME --blob-upload SAS_URL
  --s3-bucket B --s3-region R --s3-endpoint URL --s3-path retina/captures --s3-access-key-id ID --s3-secret-access-key KEY
Trigger (ours: arm on each node, write only around the first matching flow of the node's agent; needs hubble.enabled):
  --trigger-drop-reason NETFILTER_DROP --trigger-pod ns/name --trigger-verdict DROPPED|FORWARDED --trigger-protocol TCP|UDP|ICMPv4|ICMPv6
  --trigger-source-ip IP --trigger-destination-ip IP --trigger-source-pod ns/name --trigger-destination-pod ns/name
  --trigger-source-port P --trigger-destination-port P --pre-trigger-packets 100 | --pre-trigger-duration 2s
  --post-trigger-duration 10s --trigger-hubble-address 127.0.0.1:4244|unix:///path (--duration: how long it stays armed)
Run: --job-num-limit 0 --no-wait=true --cleanup-after-upload=false --use-operator=false
Image: --image IMAGE (the capture image; default: the image of the agent DaemonSet of the retina-ts chart
  installed in the cluster, else ghcr.io/retina-ts/retina-ts:<version>) --windows-image IMAGE (default: --image,
  else the chart's Windows agent image) --debug=false (as Retina: with --debug, RETINA_AGENT_IMAGE names the image)`;

/** The trigger's flags and the field each sets (spec.captureConfiguration.trigger...). */
const TRIGGER_FLAGS: Readonly<Record<string, string>> = {
  'trigger-drop-reason': 'dropReason', 'trigger-pod': 'pod', 'trigger-verdict': 'flowFilter.verdict', 'trigger-protocol': 'flowFilter.protocol',
  'trigger-source-ip': 'flowFilter.sourceIP', 'trigger-destination-ip': 'flowFilter.destinationIP', 'trigger-source-pod': 'flowFilter.sourcePod',
  'trigger-destination-pod': 'flowFilter.destinationPod', 'trigger-source-port': 'flowFilter.sourcePort', 'trigger-destination-port': 'flowFilter.destinationPort',
  'pre-trigger-packets': 'preTrigger.packets', 'pre-trigger-duration': 'preTrigger.duration', 'post-trigger-duration': 'postTriggerDuration',
  'trigger-hubble-address': 'hubbleAddress',
};
const TRIGGER_AT = 'spec.captureConfiguration.trigger';

/** The trigger from its flags (undefined when none is given); numbers stay text when they do not read as one, so the check names them. */
export function triggerFromFlags(f: Flags): CaptureTrigger | undefined {
  const t: Record<string, unknown> = {};
  for (const [flag, field] of Object.entries(TRIGGER_FLAGS)) {
    const v = f.str(flag);
    if (v === undefined) continue;
    const numeric = /(Port|packets)$/.test(field);
    const value = numeric && /^\d+$/.test(v) ? Number(v) : v;
    const [a, b] = field.split('.') as [string, string | undefined];
    if (b === undefined) t[a] = value;
    else t[a] = { ...(t[a] as Record<string, unknown> | undefined), [b]: value };
  }
  return Object.keys(t).length ? (t as CaptureTrigger) : undefined;
}

/** A trigger problem with the flag that set its field: `... (--trigger-pod)`. */
export function withTriggerFlag(problem: string): string {
  if (!problem.startsWith(TRIGGER_AT)) return problem;
  const field = problem.slice(TRIGGER_AT.length + 1).split(':')[0] ?? '';
  const flag = Object.entries(TRIGGER_FLAGS).find(([, f]) => f === field)?.[0];
  return flag ? `${problem} (--${flag})` : problem;
}

const STRINGS = {
  ...NAME_FLAG, image: undefined, 'windows-image': undefined,
  duration: '1m', 'max-size': '100', 'file-count': '0', 'packet-size': '0', 'node-names': undefined, 'node-selectors': 'kubernetes.io/os=linux',
  'pod-names': undefined, 'pod-selectors': undefined, 'namespace-selectors': undefined, 'host-path': 'retina', 'host-path-base-dir': DEFAULT_HOSTPATH_BASE_DIR,
  pvc: undefined, 'blob-upload': undefined, 's3-region': undefined, 's3-endpoint': undefined, 's3-bucket': undefined, 's3-path': 'retina/captures',
  's3-access-key-id': undefined, 's3-secret-access-key': undefined, 'tcpdump-filter': undefined, 'pcap-filter': undefined, 'source-ips': undefined,
  'destination-ips': undefined, interfaces: undefined, verbosity: undefined, 'timestamp-format': undefined, 'print-data': undefined,
  'exclude-filter': undefined, 'include-filter': undefined, 'job-num-limit': '0', 'poll-interval': '5s',
  ...Object.fromEntries(Object.keys(TRIGGER_FLAGS).map((k) => [k, undefined])),
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
  const trigger = triggerFromFlags(f);
  if (trigger) cc.trigger = trigger;
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
  const problems = validateCaptureSpec(input.spec).map(withTriggerFlag);
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
  const request: CaptureRequest = { name, namespace: ns, spec: input.spec, secrets: input.secrets };
  const wait = { durationMs: captureRunMs(input.spec), everyMs: pollMs(f) };
  try {
    if (f.bool('use-operator')) {
      const made = await createCaptureResource(client, request);
      out(`capture ${ns}/${name} created (Capture resource; the operator runs it)${made.length ? `; secrets ${made.join(', ')}` : ''}`);
      if (f.bool('no-wait')) return 0;
      let last = '';
      const r = await waitForCaptureResource(client, ns, name, {
        ...wait,
        onStatus: (s) => {
          const n = s.nodeCounts;
          const line = `${name}: ${(s.nodes ?? []).map((x) => `${x.name}=${x.state}`).join(' ') || 'starting'}${n ? ` (pending ${n.pending}, running ${n.running}, completed ${n.completed}, failed ${n.failed}, uploaded ${n.uploaded})` : ''}`;
          if (line !== last) out(line);
          last = line;
        },
      });
      out(`capture ${ns}/${name}: ${r.error ? `${r.error.reason}: ${r.error.message}; ` : ''}deleted`);
      return r.error || !r.completed ? 1 : 0;
    }
    const made = await createCaptureJobs(client, {
      ...request, nodeNames: input.nodeNames, version: version(), env, hostPathBaseDir: baseDir, jobNumLimit: f.int('job-num-limit'),
      images: { image: f.str('image'), windowsImage: f.str('windows-image'), debug: f.bool('debug') },
    }, {
      images: (images, os) => {
        if (os.has('linux')) err(`note: capture image ${images.linuxImage} (from ${images.linuxFrom})`);
        if (os.has('windows')) err(`note: Windows capture image ${images.windowsImage} (from ${images.windowsFrom})`);
      },
      noServiceAccount: (namespace) => err(`note: no ServiceAccount ${CAPTURE_SERVICE_ACCOUNT} in namespace ${namespace}: the capture pods run as the default one and cannot annotate themselves with their file's name, so download lists each node's capture directory (the operator creates that account when it runs a capture in a namespace)`),
    });
    if (made.kind === 'exists') {
      err(`capture ${ns}/${name} already has jobs; delete it first (kubectl-retina capture delete --name ${name} -n ${ns})`);
      return 1;
    }
    if (made.kind === 'no-such-nodes' || made.kind === 'refused') {
      err(made.kind === 'refused' ? made.message : `--node-names: no node ${made.nodes.join(', ')}`);
      return 1;
    }
    out(`capture ${ns}/${name}: ${made.jobs.length} job(s) created: ${made.jobs.join(', ')}${made.secrets.length ? `; secrets ${made.secrets.join(', ')}` : ''}`);
    if (input.spec.captureConfiguration.trigger) out(`capture ${ns}/${name}: armed for ${f.str('duration')} on each node; triggers on ${describeTrigger(resolveTrigger(input.spec.captureConfiguration.trigger))}`);
    if (f.bool('no-wait')) return 0;
    let last = '';
    const r = await waitForJobs(client, ns, name, {
      ...wait,
      onProgress: (p) => {
        const line = printProgress(p);
        if (line !== last) out(line);
        last = line;
      },
    });
    out(`capture ${ns}/${name}: ${r.timedOut ? 'timed out; ' : ''}deleted ${r.removed.jobs} job(s) and ${r.removed.secrets} secret(s)`);
    return r.failed > 0 || r.timedOut ? 1 : 0;
  } catch (e) {
    err((e as Error).message);
    return 1;
  } finally {
    client.close();
  }
}

/** --poll-interval (hidden, for tests): 5s unless it reads as <n>ms|s|m. */
function pollMs(f: Flags): number {
  const m = /^(\d+)(ms|s|m)$/.exec(f.str('poll-interval') ?? '5s');
  if (!m) return 5000;
  return Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000);
}
