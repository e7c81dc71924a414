/**
 * `kubectl-retina capture download`: Retina's flags (`--name`, `--namespace`, `--all`,
 * `--all-namespaces`, `--blob-url`, `-o/--output`) plus S3, and what it prints. The capture client
 * (src/capture/client: downloadCaptures) fetches each finished capture pod's tarball from its node
 * through a helper pod and `pods/exec` into `<output>/<capture>/` (or from blob storage or S3); `--all`
 * bundles every capture into `<output>/all-captures-<YYYYMMDDhhmmss>.tar.gz` organised
 * `[<namespace>/]<capture>/<tarball>`. Every tarball is checked after the transfer: its size, that it
 * reads to the end, and the sha256 digests its manifest.json lists. Ctrl-C deletes the helper pods (130).
 */
import { resolve } from 'node:path';
import { ChecksumError, DEFAULT_DOWNLOAD_IMAGE, DownloadError, downloadCaptures, type S3Source } from '../../capture/client/index.js';
import { parseFlags, UsageError, type Flags as KubectlFlags } from '../args.js';
import { KUBE_FLAGS_USAGE, loadKube, withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { Progress, type ProgressSink } from './download-progress.js';

export interface DownloadIO {
  readonly stdout?: { write(s: string): unknown };
  readonly stderr?: ProgressSink;
  readonly env?: NodeJS.ProcessEnv;
  /** Aborting it is Ctrl-C: helper pods are deleted and the command returns 130. */
  readonly signal?: AbortSignal;
  readonly now?: () => Date;
  /** Whether SIGINT/SIGTERM abort the download (default true; tests turn it off). */
  readonly handleSignals?: boolean;
  /** kubectl's flags the main entry took out of the arguments. */
  readonly kube?: KubeFlags;
}

const USAGE = `Usage: kubectl-retina capture download [flags]

Download the files of a capture: from the nodes (hostPath output, through a helper pod and pods/exec),
from Azure Blob (--blob-url) or from S3 (--s3-bucket).

  --name NAME              the capture's name
  -n, --namespace NS       the capture's namespace (default: the kubeconfig context's, else default)
  --all                    every capture in the namespace, bundled into all-captures-<YYYYMMDDhhmmss>.tar.gz
  --all-namespaces         with --all: every namespace (the bundle is organised <namespace>/<capture>/)
  --blob-url URL           a container SAS URL (read+list); downloads the blobs starting with --name
  --s3-bucket BUCKET       download from S3 (objects under --s3-path/<name>)
  --s3-endpoint URL        S3-compatible endpoint (path-style)
  --s3-region REGION       (default us-east-1)
  --s3-path PATH           (default retina/captures)
  --s3-access-key-id ID    or env AWS_ACCESS_KEY_ID
  --s3-secret-access-key K or env AWS_SECRET_ACCESS_KEY
  -o, --output DIR         where to write (default ./)
  --download-image IMAGE   the Linux helper pod's image (env RETINA_DOWNLOAD_IMAGE;
                           default ${DEFAULT_DOWNLOAD_IMAGE})
  --download-image-windows IMAGE  the Windows helper pod's image (env RETINA_DOWNLOAD_IMAGE_WINDOWS;
                           default mcr.microsoft.com/windows/nanoserver:<ltsc of the node>)
  --pod-timeout SECONDS    how long to wait for a helper pod to run (default 120)

${KUBE_FLAGS_USAGE}
`;

interface Flags {
  name?: string;
  all: boolean;
  allNamespaces: boolean;
  blobUrl?: string;
  s3?: S3Source;
  output: string;
  /** kubectl's flags (--kubeconfig, --context, -n, --as, ...). */
  kube: KubeFlags;
  linuxImage?: string;
  windowsImage?: string;
  podTimeoutMs: number;
  help: boolean;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

const DOWNLOAD_STRINGS: Readonly<Record<string, undefined>> = Object.fromEntries(
  ['name', 'blob-url', 's3-bucket', 's3-endpoint', 's3-region', 's3-path', 's3-access-key-id', 's3-secret-access-key',
    'output', 'download-image', 'download-image-windows', 'pod-timeout'].map((k) => [k, undefined]),
);

export function parseDownloadFlags(argv: readonly string[], env: NodeJS.ProcessEnv, kubeFlags: KubeFlags = {}): Flags {
  const split = withKubeFlags(argv, kubeFlags);
  // The kubectl-style parser of every command (--flag=value, --bool=false, -n, -A, -o).
  const f: KubectlFlags = parseFlags(split.rest, { strings: DOWNLOAD_STRINGS, booleans: { all: false, 'all-namespaces': false, help: false }, short: { A: 'all-namespaces', o: 'output', h: 'help' } });
  const values: Record<string, string | boolean | undefined> = {
    ...Object.fromEntries(Object.keys(DOWNLOAD_STRINGS).map((k) => [k, f.str(k)])),
    all: f.bool('all'), 'all-namespaces': f.bool('all-namespaces'), help: f.bool('help'),
  };
  const timeout = str(values['pod-timeout']);
  const secs = timeout === undefined ? 120 : Number(timeout);
  if (!Number.isFinite(secs) || secs <= 0) throw new UsageError(`--pod-timeout: ${JSON.stringify(timeout)} is not a positive number of seconds`);
  const bucket = str(values['s3-bucket']);
  const flags: Flags = {
    all: values['all'] === true,
    allNamespaces: values['all-namespaces'] === true,
    output: str(values['output']) ?? './',
    podTimeoutMs: secs * 1000,
    help: values['help'] === true,
    kube: split.kube,
  };
  const set = <K extends keyof Flags>(k: K, v: Flags[K] | undefined): void => {
    if (v !== undefined) flags[k] = v;
  };
  set('name', str(values['name']));
  set('blobUrl', str(values['blob-url']));
  set('linuxImage', str(values['download-image']) ?? str(env['RETINA_DOWNLOAD_IMAGE']));
  set('windowsImage', str(values['download-image-windows']) ?? str(env['RETINA_DOWNLOAD_IMAGE_WINDOWS']));
  if (bucket !== undefined) {
    const s3: { -readonly [K in keyof S3Source]: S3Source[K] } = { bucket, path: str(values['s3-path']) ?? 'retina/captures' };
    const endpoint = str(values['s3-endpoint']);
    const region = str(values['s3-region']);
    const id = str(values['s3-access-key-id']) ?? str(env['AWS_ACCESS_KEY_ID']);
    const secret = str(values['s3-secret-access-key']) ?? str(env['AWS_SECRET_ACCESS_KEY']);
    if (endpoint !== undefined) s3.endpoint = endpoint;
    if (region !== undefined) s3.region = region;
    if (id !== undefined) s3.accessKeyId = id;
    if (secret !== undefined) s3.secretAccessKey = secret;
    flags.s3 = s3;
  } else {
    for (const k of ['s3-endpoint', 's3-region', 's3-path', 's3-access-key-id', 's3-secret-access-key']) {
      if (str(values[k]) !== undefined) throw new UsageError(`--${k} needs --s3-bucket`);
    }
  }
  if (flags.help) return flags;
  if (flags.allNamespaces && !flags.all) throw new UsageError('--all-namespaces works only with --all');
  if (!flags.name && !flags.blobUrl && !flags.all && !flags.s3) throw new UsageError('give --name, --all, --blob-url or --s3-bucket');
  if (flags.all && flags.name) throw new UsageError('--all and --name exclude each other');
  if (flags.name !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(flags.name)) {
    throw new UsageError(`--name: ${JSON.stringify(flags.name)} is not a valid capture name (lower-case letters, digits, '-' and '.')`);
  }
  return flags;
}

export async function runDownload(argv: string[], io: DownloadIO = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr: ProgressSink = io.stderr ?? process.stderr;
  const env = io.env ?? process.env;
  let flags: Flags;
  try {
    flags = parseDownloadFlags(argv, env, io.kube);
  } catch (e) {
    stderr.write(`error: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (flags.help) {
    stdout.write(USAGE);
    return 0;
  }

  const ac = new AbortController();
  const onOuterAbort = (): void => ac.abort(io.signal?.reason);
  io.signal?.addEventListener('abort', onOuterAbort, { once: true });
  if (io.signal?.aborted) ac.abort(io.signal.reason);
  const onSignal = (sig: NodeJS.Signals): void => {
    stderr.write(`\n${sig}: stopping, deleting helper pods…\n`);
    ac.abort(new Error(`interrupted by ${sig}`));
  };
  const handle = io.handleSignals ?? true;
  if (handle) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  try {
    const r = await downloadCaptures({
      output: resolve(flags.output), all: flags.all, allNamespaces: flags.allNamespaces, podReadyTimeoutMs: flags.podTimeoutMs, signal: ac.signal,
      now: io.now ?? ((): Date => new Date()),
      cluster: async () => {
        const kube = await loadKube(flags.kube, env);
        return { client: kube.client(), namespace: kube.namespace };
      },
      ...(flags.name !== undefined ? { name: flags.name } : {}),
      ...(flags.blobUrl ? { blobUrl: flags.blobUrl } : {}),
      ...(flags.s3 ? { s3: flags.s3 } : {}),
      ...(flags.linuxImage ? { linuxImage: flags.linuxImage } : {}),
      ...(flags.windowsImage ? { windowsImage: flags.windowsImage } : {}),
    }, {
      log: (s) => void stderr.write(`${s}\n`),
      warn: (s) => void stderr.write(`warning: ${s}\n`),
      failed: (s) => void stderr.write(`error: ${s}\n`),
      verified: (file, v) => void stderr.write(v.manifest
        ? `verified ${file}: sha256 of ${v.verified.length} file(s) match ${v.manifest}\n`
        : `checked ${file}: a complete archive of ${v.entries} file(s); it has no manifest.json, so there are no checksums to verify\n`),
      written: (file) => void stdout.write(`File written to: ${file}\n`),
      progress: (label, total) => new Progress(stderr, label, total),
    });
    if (r.kind === 'no-captures') {
      stdout.write(`No captures found ${r.namespace === undefined ? 'in any namespace' : `in namespace ${r.namespace}`}\n`);
      return 0;
    }
    if (r.kind === 'nothing-downloaded') {
      stderr.write('error: no capture files were downloaded\n');
      return 1;
    }
    if (r.bundle) stdout.write(`Archive written to: ${r.bundle.path} (${r.bundle.files} file(s))\n`);
    return r.failures > 0 ? 1 : 0;
  } catch (e) {
    if (ac.signal.aborted) {
      stderr.write('download interrupted\n');
      return 130;
    }
    if (e instanceof DownloadError || e instanceof ChecksumError) {
      stderr.write(`error: ${e.message}\n`);
      return 1;
    }
    const sys = e as NodeJS.ErrnoException;
    if (typeof sys.code === 'string' && typeof sys.syscall === 'string') {
      // the local disk: output directory not writable, disk full, ...
      stderr.write(`error: ${sys.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    io.signal?.removeEventListener('abort', onOuterAbort);
    if (handle) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}
