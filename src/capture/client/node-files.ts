/**
 * Which file each of a capture's pods left on its node: the finished pods' host directory
 * (HOSTPATH_ANNOTATION) and tarball name (FILENAME_ANNOTATION, else the directory is listed later).
 * Pure: the pods come from the API server (nodes.ts).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { CAPTURE_NAME_LABEL, FILENAME_ANNOTATION, HOSTPATH_ANNOTATION } from '../job.js';
import { tarballFromAnnotation } from '../naming.js';
import { DownloadError } from './transfer.js';

export interface CaptureRef {
  readonly namespace: string;
  readonly name: string;
}

/** One tarball to fetch from one node. */
export interface NodeFile {
  readonly capture: CaptureRef;
  readonly pod: string;
  readonly node: string;
  readonly hostPath: string;
  /** From the annotation; undefined means: list the host directory. */
  readonly tarball?: string;
}

/**
 * The files of a capture, one per finished pod of its Jobs. Pods still running or failed are reported
 * through `warn` and skipped; a capture without any pod is an error.
 */
export function nodeFiles(capture: CaptureRef, pods: readonly V1Pod[], warn: (s: string) => void): NodeFile[] {
  if (pods.length === 0) {
    throw new DownloadError(`capture ${capture.namespace}/${capture.name}: no pods found with label ${CAPTURE_NAME_LABEL}=${capture.name} (wrong --name or --namespace, or its Jobs were deleted)`);
  }
  const out: NodeFile[] = [];
  for (const p of pods) {
    const pod = p.metadata?.name ?? '?';
    const node = p.spec?.nodeName;
    const phase = p.status?.phase ?? 'Unknown';
    if (!node) {
      warn(`capture ${capture.name}: pod ${pod} is not scheduled to a node yet (${phase}); skipped`);
      continue;
    }
    if (phase !== 'Succeeded') {
      const why = phase === 'Failed' ? `failed${terminationMessage(p)}` : `is ${phase} (the capture has not finished)`;
      warn(`capture ${capture.name}: pod ${pod} on node ${node} ${why}; skipped`);
      continue;
    }
    const hostPath = p.metadata?.annotations?.[HOSTPATH_ANNOTATION];
    if (!hostPath) {
      warn(`capture ${capture.name}: pod ${pod} has no ${HOSTPATH_ANNOTATION} annotation (no hostPath output; use --blob-url or --s3-bucket); skipped`);
      continue;
    }
    if (!/^(\/|[A-Za-z]:[\\/])/.test(hostPath) || hostPath.split(/[\\/]/).includes('..')) {
      warn(`capture ${capture.name}: pod ${pod}: annotation ${HOSTPATH_ANNOTATION} ${JSON.stringify(hostPath)} is not an absolute path; skipped`);
      continue;
    }
    const ann = p.metadata?.annotations?.[FILENAME_ANNOTATION];
    let tarball: string | undefined;
    if (ann !== undefined) {
      try {
        tarball = tarballFromAnnotation(ann);
      } catch (e) {
        warn(`capture ${capture.name}: pod ${pod}: ${(e as Error).message}; listing the host directory instead`);
      }
    }
    out.push(tarball === undefined ? { capture, pod, node, hostPath } : { capture, pod, node, hostPath, tarball });
  }
  return out;
}

/** `: <the terminated container's message>`, or '' when it left none. */
export function terminationMessage(p: V1Pod): string {
  const t = p.status?.containerStatuses?.find((c) => c.state?.terminated)?.state?.terminated;
  const msg = t?.message?.trim();
  return msg ? `: ${msg.slice(0, 300)}` : '';
}
