/**
 * `kubectl-retina capture download`: Retina's flags (`--name`, `--namespace`, `--all`,
 * `--all-namespaces`, `--blob-url`, `-o/--output`) plus S3. From nodes it fetches each finished capture
 * pod's tarball through a helper pod and `pods/exec` (download-nodes.ts) into `<output>/<capture>/`;
 * `--all` bundles every capture into `<output>/all-captures-<YYYYMMDDhhmmss>.tar.gz` organised
 * `[<namespace>/]<capture>/<tarball>`. Every tarball is checked after the transfer: its size, that it
 * reads to the end, and the sha256 digests its manifest.json lists (download-verify.ts).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { create as tarCreate } from 'tar';
import { allCapturesBundleName } from '../../capture/index.js';
import { parseFlags, UsageError, type Flags as KubectlFlags } from '../args.js';
import { KUBE_FLAGS_USAGE, loadKube, withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { DownloadError, NodeDownloader, type CaptureRef } from './download-nodes.js';
import type { ProgressSink } from './download-progress.js';
import { downloadFromBlob, downloadFromS3, redactSas } from './download-remote.js';
import { ChecksumError, verifyTarball } from './download-verify.js';

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
                           default mcr.microsoft.com/azurelinux/busybox:1.36)
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
  s3?: { bucket: string; endpoint?: string; region?: string; path: string; accessKeyId?: string; secretAccessKey?: string };
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
    const s3: NonNullable<Flags['s3']> = { bucket, path: str(values['s3-path']) ?? 'retina/captures' };
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
  const warn = (s: string): void => void stderr.write(`warning: ${s}\n`);
  const log = (s: string): void => void stderr.write(`${s}\n`);
  let nodes: NodeDownloader | undefined;
  let failures = 0;
  try {
    const out = resolve(flags.output);
    await mkdir(out, { recursive: true });

    const verify = async (file: string): Promise<boolean> => {
      try {
        const r = await verifyTarball(file, relative(process.cwd(), file) || file);
        if (r.manifest) log(`verified ${file}: sha256 of ${r.verified.length} file(s) match ${r.manifest}`);
        else log(`checked ${file}: a complete archive of ${r.entries} file(s); it has no manifest.json, so there are no checksums to verify`);
        return true;
      } catch (e) {
        if (!(e instanceof ChecksumError)) throw e;
        stderr.write(`error: ${e.message} (file kept for inspection)\n`);
        return false;
      }
    };

    if (flags.blobUrl) {
      log(`downloading from blob storage ${redactSas(flags.blobUrl)}`);
      const files = await downloadFromBlob(flags.blobUrl, { dir: out, progress: stderr, signal: ac.signal, ...(flags.name ? { prefix: `${flags.name}-`, captureName: flags.name } : {}) });
      for (const f of files) {
        stdout.write(`File written to: ${f}\n`);
        if (!(await verify(f))) failures++;
      }
    }
    if (flags.s3) {
      log(`downloading from s3://${flags.s3.bucket}/${flags.s3.path}`);
      const files = await downloadFromS3({ ...flags.s3, dir: out, progress: stderr, signal: ac.signal, ...(flags.name ? { prefix: `${flags.name}-`, captureName: flags.name } : {}) });
      for (const f of files) {
        stdout.write(`File written to: ${f}\n`);
        if (!(await verify(f))) failures++;
      }
    }
    const fromNodes = (flags.name !== undefined && !flags.blobUrl && !flags.s3) || flags.all;
    if (fromNodes) {
      let kube;
      try {
        kube = await loadKube(flags.kube, env);
      } catch (e) {
        throw new DownloadError((e as Error).message, { cause: e });
      }
      const kc = kube.kubeConfig;
      const namespace = kube.namespace;
      nodes = new NodeDownloader({
        kubeConfig: kc,
        requestTimeoutMs: kube.requestTimeoutMs,
        log,
        progress: stderr,
        signal: ac.signal,
        podReadyTimeoutMs: flags.podTimeoutMs,
        ...(flags.linuxImage ? { linuxImage: flags.linuxImage } : {}),
        ...(flags.windowsImage ? { windowsImage: flags.windowsImage } : {}),
      });
      const dl = nodes;
      /** Downloads one capture's node files into dir; counts failures; returns the files that passed. */
      const fetchCapture = async (c: CaptureRef, dir: string): Promise<string[]> => {
        const files = await dl.captureFiles(c, warn);
        if (files.length === 0) {
          stderr.write(`error: capture ${c.namespace}/${c.name}: no finished capture pod with a hostPath output to download from\n`);
          failures++;
          return [];
        }
        await mkdir(dir, { recursive: true });
        const good: string[] = [];
        for (const f of files) {
          ac.signal.throwIfAborted();
          try {
            for (const p of await dl.download(f, dir)) {
              if (await verify(p)) good.push(p);
              else failures++;
            }
          } catch (e) {
            if (ac.signal.aborted || !(e instanceof DownloadError)) throw e;
            stderr.write(`error: ${e.message}\n`);
            failures++;
          }
        }
        return good;
      };

      if (flags.all) {
        const captures = await dl.listCaptures(flags.allNamespaces ? undefined : namespace);
        if (captures.length === 0) {
          stdout.write(`No captures found ${flags.allNamespaces ? 'in any namespace' : `in namespace ${namespace}`}\n`);
          return 0;
        }
        log(`found ${captures.length} capture(s) to download`);
        const stage = await mkdtemp(join(out, '.all-captures-'));
        try {
          const entries: string[] = [];
          for (const c of captures) {
            const rel = flags.allNamespaces ? join(c.namespace, c.name) : c.name;
            try {
              for (const f of await fetchCapture(c, join(stage, rel))) entries.push(relative(stage, f));
            } catch (e) {
              if (ac.signal.aborted || !(e instanceof DownloadError)) throw e;
              stderr.write(`error: ${e.message}\n`);
              failures++;
            }
          }
          if (entries.length === 0) {
            stderr.write('error: no capture files were downloaded\n');
            return 1;
          }
          const bundle = join(out, allCapturesBundleName((io.now ?? (() => new Date()))()));
          await tarCreate({ gzip: true, file: bundle, cwd: stage, portable: true }, entries.sort());
          stdout.write(`Archive written to: ${bundle} (${entries.length} file(s))\n`);
        } finally {
          await rm(stage, { recursive: true, force: true });
        }
      } else if (flags.name) {
        const files = await fetchCapture({ namespace, name: flags.name }, join(out, flags.name));
        for (const f of files) stdout.write(`File written to: ${f}\n`);
      }
    }
    return failures > 0 ? 1 : 0;
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
    await nodes?.cleanup();
    io.signal?.removeEventListener('abort', onOuterAbort);
    if (handle) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}
