/**
 * The `retina-capture` workload: one capture on one node. It checks the outputs (the host path, the
 * PVC mount, the blob SAS URL and S3 credentials from their Secret files) and the filter before
 * capturing, captures until the duration is over, the files reach the max size (polled), or
 * SIGTERM comes (what was captured so far is still delivered), collects the node's network state,
 * writes manifest.json, packs `<capture>-<node>-<ts>UTC.tar.gz` and delivers it to every output.
 * Exit status 0 only when every output has the tarball.
 */
import { readFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log/index.js';
import { captureBaseName, secretFiles, type WorkloadEnv } from './env.js';
import { buildManifest, captureFiles, type Manifest, type StopReason } from './manifest.js';
import { blobOutput } from './outputs/blob.js';
import { hostPathOutput, pvcOutput } from './outputs/directory.js';
import type { Output } from './outputs/output.js';
import { s3Output } from './outputs/s3.js';
import { CaptureError, type CaptureCounts, type CaptureProvider } from './provider.js';
import type { TriggerSource } from './trigger-hubble.js';
import type { ResolvedTrigger } from './trigger.js';
import { captureTriggered, type ManifestTrigger } from './triggered.js';

export { CaptureError } from './provider.js';

/** How often the capture files' size is checked against CAPTURE_MAX_SIZE (Retina: 5 s). */
export const SIZE_POLL_MS = 5_000;
/** CAPTURE_MAX_SIZE's unit: tcpdump's -C megabyte (1,000,000 bytes). */
export const MB = 1_000_000;

export interface WorkloadDeps {
  readonly provider: CaptureProvider;
  readonly log: Logger;
  /** A scratch folder for the capture folder and the tarball (removed by the caller). */
  readonly workDir: string;
  /** Where the Secrets are mounted (`/`; tests use a folder). */
  readonly secretsRoot: string;
  /** The folder HOSTPATH must stay under (HOSTPATH itself when not given). */
  readonly hostPathBase: string | undefined;
  /** Aborted on SIGTERM: the capture stops and what it has is delivered. */
  readonly signal: AbortSignal;
  /** Annotates the workload's own pod with the tarball name (best effort). */
  readonly annotate?: (tarball: string) => Promise<void>;
  readonly sizePollMs?: number;
  readonly now?: () => Date;
  /** Arms a triggered capture's trigger (CAPTURE_TRIGGER): src/cli hands in hubbleTrigger over the agent's Hubble. */
  readonly trigger?: (t: ResolvedTrigger) => TriggerSource;
}

export interface Delivery {
  readonly output: string;
  readonly location?: string;
  readonly error?: string;
}

export interface WorkloadResult {
  readonly tarball: string;
  readonly manifest: Manifest;
  readonly deliveries: readonly Delivery[];
  /** Why the run counts as failed (empty: success). */
  readonly failures: readonly string[];
}

async function readSecret(path: string, what: string): Promise<string> {
  try {
    const v = (await readFile(path, 'utf8')).trim();
    if (!v) throw new CaptureError(`${what} (${path}) is empty`);
    return v;
  } catch (e) {
    if (e instanceof CaptureError) throw e;
    throw new CaptureError(`cannot read ${what} (${path}): ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

const exists = (p: string): Promise<boolean> => readFile(p).then(() => true, () => false);

/** The capture's outputs, checked (paths created and validated, secrets read); throws CaptureError. */
export async function resolveOutputs(env: WorkloadEnv, deps: Pick<WorkloadDeps, 'secretsRoot' | 'hostPathBase'>): Promise<Output[]> {
  const outputs: Output[] = [];
  const files = secretFiles(deps.secretsRoot);
  if (env.hostPath) {
    const o = hostPathOutput(env.hostPath, deps.hostPathBase);
    await o.prepare();
    outputs.push(o);
  }
  if (env.pvcPath) {
    const o = pvcOutput(env.pvcPath);
    await o.prepare();
    outputs.push(o);
  }
  if (await exists(files.blobUrl)) outputs.push(blobOutput(await readSecret(files.blobUrl, 'the blob upload URL'), files.blobUrl, { captureName: env.captureName }));
  if (env.s3) {
    outputs.push(s3Output(env.s3, {
      accessKeyId: await readSecret(files.s3AccessKeyId, 'the S3 access key id (S3_BUCKET is set)'),
      secretAccessKey: await readSecret(files.s3SecretAccessKey, 'the S3 secret access key (S3_BUCKET is set)'),
    }, { captureName: env.captureName }));
  }
  if (!outputs.length) throw new CaptureError('no output: set HOSTPATH, PERSISTENT_VOLUME_CLAIM or S3_BUCKET, or mount the blob upload Secret');
  return outputs;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((r) => {
    const t = setTimeout(r, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      r();
    }, { once: true });
  });

/** A plain capture: the tool writes its files until the duration, the max size, SIGTERM or its own end. */
async function capturePlain(env: WorkloadEnv, deps: WorkloadDeps, dir: string, base: string, failures: string[]): Promise<{ startedAt: Date; stoppedAt: Date; stopReason: StopReason; counts: CaptureCounts }> {
  const { provider, log } = deps;
  const now = deps.now ?? (() => new Date());
  const running = await provider.start(env, { dir, base, logFile: join(dir, provider.logName), log });
  const startedAt = now();
  log.info('capturing', { base, durationMs: env.durationMs, maxSizeMb: env.maxSizeMb });

  // Whichever comes first: the duration, the max size, SIGTERM, or the tool ending by itself.
  const stopped = new AbortController();
  const wake = AbortSignal.any([stopped.signal, deps.signal]);
  const reasons: Promise<{ reason: StopReason; detail?: string }>[] = [
    sleep(env.durationMs, wake).then(() => ({ reason: 'duration' as const })),
    new Promise((r) => (deps.signal.aborted ? r({ reason: 'signal' }) : deps.signal.addEventListener('abort', () => r({ reason: 'signal' }), { once: true }))),
    running.ended.then((detail) => ({ reason: 'toolEnded' as const, detail })),
  ];
  if (!provider.limitsSize(env)) {
    reasons.push((async () => {
      for (;;) {
        await sleep(deps.sizePollMs ?? SIZE_POLL_MS, wake);
        if (wake.aborted) return new Promise<never>(() => undefined);
        if ((await running.bytesWritten()) >= env.maxSizeMb * MB) return { reason: 'maxSize' as const };
      }
    })());
  }
  const why = await Promise.race(reasons);
  stopped.abort();
  log.info('stopping the capture', { reason: why.reason, detail: why.detail });
  if (why.reason === 'toolEnded') failures.push(why.detail ?? 'the capture tool ended by itself');
  let counts: CaptureCounts = { packets: null, dropped: null };
  try {
    counts = await running.stop();
  } catch (e) {
    failures.push((e as Error).message);
  }
  return { startedAt, stoppedAt: now(), stopReason: why.reason, counts };
}

export async function runWorkload(env: WorkloadEnv, deps: WorkloadDeps): Promise<WorkloadResult> {
  const { provider, log } = deps;
  const now = deps.now ?? (() => new Date());
  const outputs = await resolveOutputs(env, deps);
  await provider.check(env, log);

  const base = captureBaseName(env.captureName, env.nodeName, env.startTimestamp ?? now());
  const dir = join(deps.workDir, base);
  await mkdir(dir, { recursive: true });
  if (deps.signal.aborted) throw new CaptureError('stopped (SIGTERM) before the capture started');
  const failures: string[] = [];
  let run: { startedAt: Date; stoppedAt: Date; stopReason: StopReason; counts: CaptureCounts; trigger?: ManifestTrigger };
  if (env.trigger) {
    if (!deps.trigger) throw new CaptureError('CAPTURE_TRIGGER is set but this workload has no trigger source');
    const r = await captureTriggered(env, { provider, log, signal: deps.signal, now, trigger: deps.trigger }, dir, base, join(dir, provider.logName));
    failures.push(...r.failures);
    run = r;
  } else run = await capturePlain(env, deps, dir, base, failures);
  const { startedAt, stoppedAt, counts } = run;

  if (env.includeMetadata) {
    const mdir = join(dir, 'metadata');
    await mkdir(mdir, { recursive: true });
    try {
      await provider.collectMetadata(mdir, log);
    } catch (e) {
      log.warn('metadata collection failed', { error: (e as Error).message });
      await writeFile(join(mdir, 'error.txt'), `${(e as Error).message}\n`);
    }
  }
  const manifest = buildManifest({ env, os: provider.os, startedAt, stoppedAt, stopReason: run.stopReason, counts, files: await captureFiles(dir, base), metadata: env.includeMetadata, trigger: run.trigger });
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  // An armed capture whose trigger never came (by the end of its duration, or SIGTERM) writes no packet file: that is its answer, not a failure.
  if (!manifest.files.length && !(run.trigger && !run.trigger.fired)) failures.push('the capture wrote no file');

  const tarball = `${base}.tar.gz`;
  const tarPath = join(deps.workDir, tarball);
  const tar = await import('tar');
  await tar.create({ gzip: true, file: tarPath, cwd: deps.workDir, portable: true }, [base]);
  log.info('tarball written', { tarball, packets: counts.packets, dropped: counts.dropped, files: manifest.files.length });

  const deliveries: Delivery[] = [];
  for (const o of outputs) {
    try {
      const location = await o.deliver(tarPath, tarball);
      deliveries.push({ output: o.name, location });
      log.info('tarball delivered', { output: o.name, location });
    } catch (e) {
      const error = (e as Error).message;
      deliveries.push({ output: o.name, error });
      failures.push(`${o.name}: ${error}`);
      log.error('delivery failed', { output: o.name, error });
    }
  }
  if (deps.annotate && deliveries.some((d) => d.location)) {
    await deps.annotate(tarball).catch((e: unknown) => log.warn('cannot annotate the pod with the tarball name', { error: (e as Error).message }));
  }
  await rm(dir, { recursive: true, force: true });
  return { tarball, manifest, deliveries, failures };
}
