/**
 * Downloading capture tarballs from nodes, as Retina does: the capture's Job pods (label
 * CAPTURE_NAME_LABEL) say where the file is (annotations HOSTPATH_ANNOTATION and FILENAME_ANNOTATION);
 * a helper pod pinned to the node mounts that host directory (helper-pod.ts), and the file is
 * streamed out through `pods/exec` (src/k8s's execInPod, on the same client as every request). Every
 * helper pod is deleted when the download ends, fails or is aborted (Ctrl-C).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { collectionPath, execInPod, isApiError, objectPath, resources, type ExecStatus, type KubeList, type RestClient } from '../../k8s/index.js';
import { CAPTURE_APP_LABEL, CAPTURE_NAME_LABEL, FILENAME_ANNOTATION } from '../job.js';
import { isNodeTarball } from '../naming.js';
import { HELPER_APP, HELPER_CONTAINER, helperCommands, helperPod, trimName, type OsCommands } from './helper-pod.js';
import { nodeFiles, terminationMessage, type CaptureRef, type NodeFile } from './node-files.js';
import { listCaptureJobs } from './jobs.js';
import { DownloadError, type TransferReporter } from './transfer.js';

export interface NodeDownloaderOptions {
  /** The cluster (kubectl's --request-timeout applies to its requests, not to the exec streams). */
  readonly client: RestClient;
  readonly linuxImage?: string;
  readonly windowsImage?: string;
  readonly podReadyTimeoutMs?: number;
  readonly log: (line: string) => void;
  readonly progress: TransferReporter;
  readonly signal: AbortSignal;
}

const statusCode = (e: unknown): number | undefined => (isApiError(e) ? e.code : undefined);
/** What the API server said (its Status message), else the error's own message. */
const apiMessage = (e: unknown): string => (isApiError(e) ? e.statusMessage : (e as Error)?.message ?? String(e));

export class NodeDownloader {
  private readonly client: RestClient;
  /** Helper pods created and not yet deleted: namespace/name. */
  private readonly helpers = new Map<string, CaptureRef>();

  constructor(private readonly o: NodeDownloaderOptions) {
    this.client = o.client;
  }

  /** Captures that have Jobs (label `retina.sh/app=capture`), in one namespace or all. */
  async listCaptures(namespace: string | undefined): Promise<CaptureRef[]> {
    let jobs;
    try {
      jobs = await listCaptureJobs(this.client, namespace);
    } catch (e) {
      throw this.apiError(e, `list capture Jobs ${namespace === undefined ? 'in all namespaces' : `in namespace ${namespace}`}`, 'list jobs');
    }
    const seen = new Map<string, CaptureRef>();
    for (const j of jobs) {
      const name = j.metadata.labels?.[CAPTURE_NAME_LABEL];
      const ns = j.metadata.namespace;
      if (name && ns) seen.set(`${ns}/${name}`, { namespace: ns, name });
    }
    return [...seen.values()].sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  }

  /**
   * The files of a capture, one per finished Job pod. Pods still running or failed are reported
   * through `warn` and skipped; a capture without any pod, or whose pods have no host path, is an error.
   */
  async captureFiles(capture: CaptureRef, warn: (s: string) => void): Promise<NodeFile[]> {
    let pods: V1Pod[];
    try {
      const labelSelector = `${CAPTURE_NAME_LABEL}=${capture.name},${CAPTURE_APP_LABEL}!=${HELPER_APP}`;
      pods = (await this.client.request<KubeList<V1Pod>>('GET', collectionPath(resources.pods, capture.namespace), { query: { labelSelector } })).items;
    } catch (e) {
      throw this.apiError(e, `list the pods of capture ${capture.namespace}/${capture.name}`, 'list pods');
    }
    return nodeFiles(capture, pods, warn);
  }

  /**
   * Fetches the node's tarball(s) of one capture into `dir` (one file per tarball, named as on the
   * node); returns the paths written. The helper pod is always deleted.
   */
  async download(f: NodeFile, dir: string): Promise<string[]> {
    const node = await this.readNode(f.node);
    const cmds = helperCommands(node, f.hostPath, { linux: this.o.linuxImage, windows: this.o.windowsImage });
    const helper = await this.createHelper(f, cmds);
    try {
      await this.waitRunning(f.capture.namespace, helper, f.node);
      let names: string[];
      if (f.tarball !== undefined) {
        names = [f.tarball];
      } else {
        const listing = await this.execText(f.capture.namespace, helper, cmds.list(cmds.dir), `list ${f.hostPath} on node ${f.node}`);
        names = listing
          .split(/\r?\n/)
          .map((s) => s.trim())
          .filter((s) => isNodeTarball(s, f.capture.name, f.node))
          .sort();
        if (names.length === 0) {
          throw new DownloadError(`capture ${f.capture.name}: no ${f.capture.name}-${f.node}-*.tar.gz in ${f.hostPath} on node ${f.node} (pod ${f.pod} has no ${FILENAME_ANNOTATION} annotation)`);
        }
      }
      const written: string[] = [];
      for (const name of names) written.push(await this.fetchFile(f, helper, cmds, name, dir));
      return written;
    } finally {
      await this.deleteHelper(f.capture.namespace, helper);
    }
  }

  /** Deletes every helper pod still known (Ctrl-C, or an error path that skipped the finally). */
  async cleanup(): Promise<void> {
    await Promise.all([...this.helpers.entries()].map(([key, c]) => this.deleteHelper(c.namespace, key.slice(c.namespace.length + 1))));
  }

  private async fetchFile(f: NodeFile, helper: string, cmds: OsCommands, name: string, dir: string): Promise<string> {
    const ns = f.capture.namespace;
    const path = cmds.file(name);
    const sizeText = await this.execText(ns, helper, cmds.size(path), `read the size of ${f.hostPath}/${name} on node ${f.node}`);
    const size = Number(/^\s*(\d+)/.exec(sizeText)?.[1] ?? NaN);
    if (!Number.isSafeInteger(size)) throw new DownloadError(`node ${f.node}: could not read the size of ${f.hostPath}/${name} (got ${JSON.stringify(sizeText.slice(0, 200))})`);
    const dest = `${dir}/${name}`;
    const part = `${dest}.part`;
    const progress = this.o.progress(`${name} (${f.node})`, size);
    let received = 0;
    const file = createWriteStream(part, { mode: 0o600 });
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb): void {
        received += chunk.length;
        progress.add(chunk.length);
        file.write(chunk, cb);
      },
      final(cb): void {
        file.end(cb);
      },
    });
    try {
      await this.execStream(ns, helper, cmds.read(path), sink, `read ${f.hostPath}/${name} on node ${f.node}`);
      progress.finish();
      if (received !== size) {
        throw new DownloadError(`node ${f.node}: ${name}: received ${received} bytes, the file has ${size}; the transfer was cut short`);
      }
      await rename(part, dest);
      return dest;
    } catch (e) {
      file.destroy();
      await rm(part, { force: true });
      throw e;
    }
  }

  private async readNode(name: string): Promise<V1Node> {
    try {
      return await this.client.request<V1Node>('GET', objectPath(resources.nodes, undefined, name));
    } catch (e) {
      if (statusCode(e) === 404) throw new DownloadError(`node ${name} no longer exists: the capture files on it cannot be downloaded`);
      throw this.apiError(e, `read node ${name}`, 'get nodes');
    }
  }

  private async createHelper(f: NodeFile, c: OsCommands): Promise<string> {
    const name = `${trimName(f.capture.name, 40)}-download-${randomBytes(3).toString('hex')}`;
    const ns = f.capture.namespace;
    // registered before the create: an abort during the request still deletes it
    this.helpers.set(`${ns}/${name}`, f.capture);
    try {
      await this.client.request('POST', collectionPath(resources.pods, ns), { body: helperPod(name, ns, f.capture.name, f.node, f.hostPath, c) });
    } catch (e) {
      this.helpers.delete(`${ns}/${name}`);
      throw this.apiError(e, `create the download helper pod on node ${f.node} in namespace ${ns}`, 'create pods');
    }
    this.o.log(`created helper pod ${ns}/${name} on node ${f.node}`);
    return name;
  }

  private async waitRunning(namespace: string, name: string, node: string): Promise<void> {
    const deadline = Date.now() + (this.o.podReadyTimeoutMs ?? 120_000);
    for (;;) {
      this.o.signal.throwIfAborted();
      let p: V1Pod;
      try {
        p = await this.client.request<V1Pod>('GET', objectPath(resources.pods, namespace, name));
      } catch (e) {
        throw this.apiError(e, `read helper pod ${namespace}/${name}`, 'get pods');
      }
      const phase = p.status?.phase;
      if (phase === 'Running') return;
      if (phase === 'Failed' || phase === 'Succeeded') {
        throw new DownloadError(`helper pod ${namespace}/${name} on node ${node} ended (${phase}) before the download${terminationMessage(p)}`);
      }
      if (Date.now() > deadline) {
        const waiting = p.status?.containerStatuses?.[0]?.state?.waiting;
        const why = waiting ? `: ${waiting.reason ?? ''} ${waiting.message ?? ''}`.trimEnd() : '';
        throw new DownloadError(`helper pod ${namespace}/${name} on node ${node} is not Running after ${Math.round((this.o.podReadyTimeoutMs ?? 120_000) / 1000)} s (phase ${phase ?? 'unknown'}${why}); is the node Ready and the image pullable?`);
      }
      await sleep(250, this.o.signal);
    }
  }

  private async deleteHelper(namespace: string, name: string): Promise<void> {
    try {
      await this.client.request('DELETE', objectPath(resources.pods, namespace, name), { query: { gracePeriodSeconds: 0 } });
      this.o.log(`deleted helper pod ${namespace}/${name}`);
    } catch (e) {
      if (statusCode(e) !== 404) {
        this.o.log(`could not delete helper pod ${namespace}/${name}: ${apiMessage(e)}; delete it with: kubectl delete pod -n ${namespace} ${name}`);
        return;
      }
    }
    this.helpers.delete(`${namespace}/${name}`);
  }

  /**
   * A short read-only command's stdout (a listing, a size). Run again, up to 3 times, when the exec connection
   * broke (reset, refused, closed): these commands change nothing, and a helper pod just started can reset the
   * first exec (seen on kwok's exec server in a full test run). A command that ran and failed is not retried.
   */
  private async execText(namespace: string, pod: string, command: string[], what: string): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const chunks: Buffer[] = [];
      const sink = new Writable({
        write(c: Buffer, _e, cb): void {
          chunks.push(c);
          cb();
        },
      });
      try {
        await this.execStream(namespace, pod, command, sink, what);
        return Buffer.concat(chunks).toString('utf8');
      } catch (e) {
        if (attempt >= 3 || this.o.signal.aborted || !connectionBroke(e)) throw e;
        await sleep(500 * attempt, this.o.signal);
      }
    }
  }

  /** Runs `command` in the helper pod, its stdout into `sink`; resolves when it exited 0 and `sink` finished. */
  private async execStream(namespace: string, pod: string, command: string[], sink: Writable, what: string): Promise<void> {
    const errChunks: Buffer[] = [];
    const stderr = new Writable({
      write(c: Buffer, _e, cb): void {
        if (errChunks.length < 64) errChunks.push(c);
        cb();
      },
    });
    let sinkError: unknown;
    const finished = new Promise<void>((resolve, reject) => {
      sink.once('finish', resolve);
      sink.once('error', (e) => {
        sinkError = e;
        reject(e);
      });
    });
    finished.catch(() => undefined); // awaited below; a failure before that is not unhandled
    let st: ExecStatus | undefined;
    try {
      st = await execInPod(this.client.config, { namespace, pod, container: HELPER_CONTAINER, command, stdout: sink, stderr, signal: this.o.signal, userAgent: 'kubectl-retina' });
    } catch (e) {
      if (!sink.writableEnded) sink.destroy();
      // Ctrl-C, or the local file's failure (a full disk): as they are
      if (this.o.signal.aborted || (sinkError !== undefined && e === sinkError)) throw e;
      if (statusCode(e) === 403) throw new DownloadError(`cannot ${what}: exec into ${namespace}/${pod} was refused (403 Forbidden); the download needs RBAC 'create' on pods/exec in namespace ${namespace}`, { cause: e });
      throw new DownloadError(`cannot ${what}: exec into ${namespace}/${pod} failed: ${(e as Error).message ?? String(e)}`, { cause: e });
    }
    try {
      if (!st) throw new DownloadError(`cannot ${what}: the exec stream closed without an exit status (connection lost?)`);
      if (st.status !== 'Success') {
        const exit = st.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
        const err = Buffer.concat(errChunks).toString('utf8').trim().slice(0, 500);
        throw new DownloadError(`cannot ${what}: ${command[0]} exited${exit ? ` with code ${exit}` : ''}: ${err || st.message || 'no message'}`);
      }
      if (!sink.writableEnded) sink.end();
      await finished;
    } finally {
      if (!sink.writableEnded) sink.destroy();
    }
  }

  private apiError(e: unknown, what: string, verb: string): DownloadError {
    const code = statusCode(e);
    if (code === 403) return new DownloadError(`cannot ${what}: forbidden (RBAC: the download needs '${verb}'): ${apiMessage(e)}`, { cause: e });
    if (code === 401) return new DownloadError(`cannot ${what}: unauthorized; check the kubeconfig's credentials`, { cause: e });
    return new DownloadError(`cannot ${what}: ${apiMessage(e)}`, { cause: e });
  }
}

/** An exec that failed on its connection (reset, refused, closed without a status), not on its command. */
export function connectionBroke(e: unknown): boolean {
  for (let c: unknown = e; c instanceof Error; c = c.cause) {
    const code = (c as NodeJS.ErrnoException).code;
    if (code === 'ECONNRESET' || code === 'ECONNREFUSED' || code === 'EPIPE' || /socket hang up|closed without an exit status/.test(c.message)) return true;
  }
  return false;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
