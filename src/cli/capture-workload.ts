/**
 * `retina-capture`: the composition root of the capture workload that a capture Job runs on its node
 * (Linux: tcpdump; Windows: pktmon). It reads the Job's env contract (src/capture/env.ts), picks this
 * OS's provider through src/platform, runs the capture (src/capture/workload.ts), annotates its own pod
 * with the tarball name, and on failure writes the reason to the termination message.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CaptureEnvError, CaptureError, FILENAME_ANNOTATION, decodeWorkloadEnv, hubbleTrigger, runWorkload, type WorkloadEnv } from '../capture/index.js';
import { parseDurationMs } from '../config/index.js';
import { createRestClient, kubernetesAvailable, loadRestConfig } from '../k8s/index.js';
import { createLogger, LOG_LEVELS, type LogLevel, type Logger } from '../log/index.js';
import { currentOs, loadCaptureProvider } from '../platform/index.js';
import { packageFile, readCommandLine } from './command.js';

export const USAGE = `usage: retina-capture [flags]   (the capture is described by the Job's environment: CAPTURE_NAME, NODE_HOST_NAME, CAPTURE_DURATION, ...)
  --secrets-dir DIR          where the Secrets are mounted (default $RETINA_CAPTURE_SECRETS_ROOT or /)
  --host-path-base-dir DIR   HOSTPATH must stay under it (default $RETINA_CAPTURE_HOSTPATH_BASE_DIR, else HOSTPATH itself)
  --work-dir DIR             scratch folder for the capture and the tarball (default: a new folder in the OS temp dir)
  --termination-log FILE     the failure message goes there (default /dev/termination-log)
  --size-poll-interval DUR   how often the file size is checked against CAPTURE_MAX_SIZE (default 5s)
  --log-level LEVEL          debug|info|warn|error (default info)`;

/** PATCHes the pod's FILENAME_ANNOTATION (`retina-capture-filename`) through the API server (in cluster, or $KUBECONFIG). */
function podAnnotator(w: WorkloadEnv, env: Readonly<Record<string, string | undefined>>, log: Logger): ((tarball: string) => Promise<void>) | undefined {
  const kubeconfig = env['KUBECONFIG'] || undefined;
  if (!w.podName || !w.podNamespace || !kubernetesAvailable({ kubeconfig, env })) {
    log.info('not annotating the pod (no POD_NAME/POD_NAMESPACE or no API server)');
    return undefined;
  }
  return async (tarball) => {
    const client = createRestClient(await loadRestConfig({ kubeconfig, env }), { userAgent: 'retina-capture' });
    try {
      await client.request('PATCH', `/api/v1/namespaces/${encodeURIComponent(w.podNamespace as string)}/pods/${encodeURIComponent(w.podName as string)}`, {
        body: { metadata: { annotations: { [FILENAME_ANNOTATION]: tarball } } }, contentType: 'application/merge-patch+json', timeoutMs: 15_000,
      });
      log.info('pod annotated', { annotation: FILENAME_ANNOTATION, value: tarball });
    } finally {
      client.close();
    }
  };
}

async function terminationMessage(path: string, text: string): Promise<void> {
  // Kubernetes keeps at most 4096 bytes of it.
  await writeFile(path, text.slice(0, 4000)).catch(() => undefined);
}

export async function main(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const flags = readCommandLine('retina-capture', USAGE, argv, ['secrets-dir', 'host-path-base-dir', 'work-dir', 'termination-log', 'size-poll-interval', 'log-level']);
  if (typeof flags === 'number') return flags;
  const flag = (k: string): string | undefined => flags.values[k] as string | undefined;
  const level = (flag('log-level') ?? 'info') as LogLevel;
  const termLog = flag('termination-log') ?? '/dev/termination-log';
  if (!LOG_LEVELS.includes(level)) {
    process.stderr.write(`retina-capture: --log-level ${JSON.stringify(level)} is not one of ${LOG_LEVELS.join('|')}\n`);
    return 2;
  }
  const log = createLogger({ level, component: 'capture' });
  const fail = async (code: number, message: string): Promise<number> => {
    log.error('capture failed', { error: message });
    process.stderr.write(`retina-capture: ${message}\n`);
    await terminationMessage(termLog, message);
    return code;
  };
  let sizePollMs: number | undefined;
  if (flag('size-poll-interval') !== undefined) {
    sizePollMs = parseDurationMs(flag('size-poll-interval') as string);
    if (!sizePollMs) return fail(2, `--size-poll-interval ${JSON.stringify(flag('size-poll-interval'))} is not a positive duration`);
  }
  let w: WorkloadEnv;
  try {
    w = decodeWorkloadEnv(env);
  } catch (e) {
    if (e instanceof CaptureEnvError) return fail(2, e.message);
    throw e;
  }
  const stop = new AbortController();
  const onSignal = (s: string): void => {
    log.info('signal: stopping the capture and delivering what it has', { signal: s });
    stop.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const ownWork = flag('work-dir') === undefined;
  const workDir = flag('work-dir') ?? (await mkdtemp(join(tmpdir(), 'retina-capture-')));
  try {
    const provider = await loadCaptureProvider(currentOs());
    const r = await runWorkload(w, {
      provider, log, workDir, signal: stop.signal, sizePollMs,
      secretsRoot: flag('secrets-dir') ?? env['RETINA_CAPTURE_SECRETS_ROOT'] ?? '/',
      hostPathBase: flag('host-path-base-dir') ?? (env['RETINA_CAPTURE_HOSTPATH_BASE_DIR'] || undefined),
      annotate: podAnnotator(w, env, log),
      // Reaching the agent may take as long as the capture stays armed, at most 30 s (an agent restarting).
      trigger: (t) => hubbleTrigger(t, { protoDir: packageFile('proto/hubble'), log, connectTimeoutMs: Math.min(30_000, w.durationMs) }),
    });
    process.stdout.write(`${JSON.stringify({ tarball: r.tarball, packets: r.manifest.packets, dropped: r.manifest.dropped, stopReason: r.manifest.stopReason, deliveries: r.deliveries, ...(r.manifest.trigger ? { trigger: { fired: r.manifest.trigger.fired, dropToCaptureMs: r.manifest.trigger.dropToCaptureMs, cut: r.manifest.trigger.cut } } : {}) })}\n`);
    if (r.failures.length) return fail(1, `capture ${r.tarball}: ${r.failures.join('; ')}`);
    log.info('capture done', { tarball: r.tarball, outputs: r.deliveries.map((d) => d.output) });
    return 0;
  } catch (e) {
    if (e instanceof CaptureError) return fail(1, e.message);
    return fail(1, `unexpected error: ${(e as Error).stack ?? String(e)}`);
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    if (ownWork) await rm(workDir, { recursive: true, force: true });
  }
}
