/**
 * `kubectl-retina capture download`'s work: a capture's tarballs from Azure Blob, from S3, or from
 * the nodes (through a helper pod and `pods/exec`, nodes.ts) into `<output>/<capture>/`; with `all`,
 * every capture bundled into `<output>/all-captures-<YYYYMMDDhhmmss>.tar.gz` organised
 * `[<namespace>/]<capture>/<tarball>`. Every tarball is checked after the transfer (verify.ts): its
 * size, that it reads to the end, and the sha256 digests its manifest.json lists. What happens is
 * told to a DownloadReport; the words and the exit code are the caller's.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { create as tarCreate } from 'tar';
import type { RestClient } from '../../k8s/index.js';
import { allCapturesBundleName } from '../naming.js';
import type { CaptureRef } from './node-files.js';
import { NodeDownloader } from './nodes.js';
import { downloadFromBlob, downloadFromS3, redactSas, type S3Source } from './remote.js';
import { DownloadError, type TransferReporter } from './transfer.js';
import { ChecksumError, verifyTarball, type VerifyResult } from './verify.js';

export interface DownloadRequest {
  /** The output directory (made when missing). */
  readonly output: string;
  /** The capture; with neither blobUrl nor s3, from its nodes. */
  readonly name?: string;
  /** Every capture of the namespace (or of all, with allNamespaces), from the nodes, in one bundle. */
  readonly all: boolean;
  readonly allNamespaces: boolean;
  /** A container SAS URL (read + list). */
  readonly blobUrl?: string;
  readonly s3?: S3Source;
  /** The cluster and the namespace, for downloads from nodes (loaded only then; the client is closed at the end). */
  readonly cluster: () => Promise<{ readonly client: RestClient; readonly namespace: string }>;
  /** The helper pods' images (defaults: helper-pod.ts). */
  readonly linuxImage?: string;
  readonly windowsImage?: string;
  readonly podReadyTimeoutMs: number;
  /** Aborting it stops the download and deletes the helper pods; the promise then rejects. */
  readonly signal: AbortSignal;
  /** The bundle's time stamp. */
  readonly now: () => Date;
}

/** What the download tells as it goes (kubectl-retina writes it out). */
export interface DownloadReport {
  /** What is going on: the source, helper pods made and deleted. */
  log(line: string): void;
  /** Something skipped (a pod not finished, no host path); the rest goes on. */
  warn(line: string): void;
  /** A failure that fails the download but not the rest of it (counted in the outcome). */
  failed(line: string): void;
  /** A file arrived and its archive checked (its manifest's digests, when it has one). */
  verified(file: string, r: VerifyResult): void;
  /** A file of the download (told once its source or capture is done). */
  written(file: string): void;
  readonly progress: TransferReporter;
}

export type DownloadOutcome =
  | { readonly kind: 'done'; readonly failures: number; readonly bundle?: { readonly path: string; readonly files: number } }
  /** `all` found no capture (in `namespace`; in any when undefined). */
  | { readonly kind: 'no-captures'; readonly namespace: string | undefined }
  /** `all` found captures, but none of their files came. */
  | { readonly kind: 'nothing-downloaded' };

/** Downloads what `r` asks for; a DownloadError or ChecksumError that ends it all rejects (with helper pods deleted). */
export async function downloadCaptures(r: DownloadRequest, report: DownloadReport): Promise<DownloadOutcome> {
  let failures = 0;
  let nodes: NodeDownloader | undefined;
  let cluster: RestClient | undefined;
  const verify = async (file: string): Promise<boolean> => {
    try {
      report.verified(file, await verifyTarball(file, relative(process.cwd(), file) || file));
      return true;
    } catch (e) {
      if (!(e instanceof ChecksumError)) throw e;
      report.failed(`${e.message} (file kept for inspection)`);
      return false;
    }
  };
  const byName = r.name ? { prefix: `${r.name}-`, captureName: r.name } : {};
  try {
    await mkdir(r.output, { recursive: true });
    if (r.blobUrl) {
      report.log(`downloading from blob storage ${redactSas(r.blobUrl)}`);
      for (const f of await downloadFromBlob(r.blobUrl, { dir: r.output, progress: report.progress, signal: r.signal, ...byName })) {
        report.written(f);
        if (!(await verify(f))) failures++;
      }
    }
    if (r.s3) {
      report.log(`downloading from s3://${r.s3.bucket}/${r.s3.path}`);
      for (const f of await downloadFromS3({ ...r.s3, dir: r.output, progress: report.progress, signal: r.signal, ...byName })) {
        report.written(f);
        if (!(await verify(f))) failures++;
      }
    }
    if (!((r.name !== undefined && !r.blobUrl && !r.s3) || r.all)) return { kind: 'done', failures };

    let namespace: string;
    try {
      ({ client: cluster, namespace } = await r.cluster());
    } catch (e) {
      throw new DownloadError((e as Error).message, { cause: e });
    }
    const dl = new NodeDownloader({
      client: cluster, log: (s) => report.log(s), progress: report.progress, signal: r.signal, podReadyTimeoutMs: r.podReadyTimeoutMs,
      ...(r.linuxImage ? { linuxImage: r.linuxImage } : {}), ...(r.windowsImage ? { windowsImage: r.windowsImage } : {}),
    });
    nodes = dl;
    /** Downloads one capture's node files into dir; counts failures; returns the files that passed. */
    const fetchCapture = async (c: CaptureRef, dir: string): Promise<string[]> => {
      const files = await dl.captureFiles(c, (s) => report.warn(s));
      if (files.length === 0) {
        report.failed(`capture ${c.namespace}/${c.name}: no finished capture pod with a hostPath output to download from`);
        failures++;
        return [];
      }
      await mkdir(dir, { recursive: true });
      const good: string[] = [];
      for (const f of files) {
        r.signal.throwIfAborted();
        try {
          for (const p of await dl.download(f, dir)) {
            if (await verify(p)) good.push(p);
            else failures++;
          }
        } catch (e) {
          if (r.signal.aborted || !(e instanceof DownloadError)) throw e;
          report.failed(e.message);
          failures++;
        }
      }
      return good;
    };

    if (!r.all) {
      const name = r.name as string;
      for (const f of await fetchCapture({ namespace, name }, join(r.output, name))) report.written(f);
      return { kind: 'done', failures };
    }
    const scope = r.allNamespaces ? undefined : namespace;
    const captures = await dl.listCaptures(scope);
    if (captures.length === 0) return { kind: 'no-captures', namespace: scope };
    report.log(`found ${captures.length} capture(s) to download`);
    const stage = await mkdtemp(join(r.output, '.all-captures-'));
    try {
      const entries: string[] = [];
      for (const c of captures) {
        const rel = r.allNamespaces ? join(c.namespace, c.name) : c.name;
        try {
          for (const f of await fetchCapture(c, join(stage, rel))) entries.push(relative(stage, f));
        } catch (e) {
          if (r.signal.aborted || !(e instanceof DownloadError)) throw e;
          report.failed(e.message);
          failures++;
        }
      }
      if (entries.length === 0) return { kind: 'nothing-downloaded' };
      const bundle = join(r.output, allCapturesBundleName(r.now()));
      await tarCreate({ gzip: true, file: bundle, cwd: stage, portable: true }, entries.sort());
      return { kind: 'done', failures, bundle: { path: bundle, files: entries.length } };
    } finally {
      await rm(stage, { recursive: true, force: true });
    }
  } finally {
    await nodes?.cleanup();
    cluster?.close();
  }
}
