/**
 * Downloading capture tarballs from nodes, as Retina does: the capture's Job pods (label
 * `capture-name=<capture>`) say where the file is (annotations `retina-capture-hostpath` and
 * `retina-capture-filename`); a helper pod pinned to the node mounts that host directory at
 * `/host<hostPath>` (`C:\host<hostPath>` on Windows), and the file is streamed out through
 * `pods/exec` (client-node's Exec over WebSocket). Every helper pod is deleted when the download ends,
 * fails or is aborted (Ctrl-C).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { BatchV1Api, CoreV1Api, Exec, KubeConfig, ServerConfiguration, createConfiguration, type ApiConstructor, type ApiType, type V1Node, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { isNodeTarball, tarballFromAnnotation } from '../../capture/index.js';
import { Progress, type ProgressSink } from './download-progress.js';

export const HOSTPATH_ANNOTATION = 'retina-capture-hostpath';
export const FILENAME_ANNOTATION = 'retina-capture-filename';
export const CAPTURE_NAME_LABEL = 'capture-name';
export const APP_LABEL = 'retina.sh/app';
export const HELPER_APP = 'capture-download';
export const HELPER_CONTAINER = 'download';
export const DEFAULT_LINUX_IMAGE = 'mcr.microsoft.com/azurelinux/busybox:1.36';
export const DEFAULT_WINDOWS_IMAGE_REPO = 'mcr.microsoft.com/windows/nanoserver';

export class DownloadError extends Error {
  override readonly name = 'DownloadError';
}

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

export interface NodeDownloaderOptions {
  readonly kubeConfig: KubeConfig;
  readonly linuxImage?: string;
  readonly windowsImage?: string;
  readonly podReadyTimeoutMs?: number;
  /** kubectl's --request-timeout for each API request (not the exec streams); 0 or undefined: none. */
  readonly requestTimeoutMs?: number;
  readonly log: (line: string) => void;
  readonly progress: ProgressSink;
  readonly signal: AbortSignal;
}

type NodeOS = 'linux' | 'windows';

interface OsCommands {
  readonly image: string;
  readonly mountPath: string;
  readonly workingDir?: string;
  readonly keepAlive: string[];
  readonly dir: string;
  file(name: string): string;
  list(dir: string): string[];
  size(path: string): string[];
  read(path: string): string[];
}

function statusCode(e: unknown): number | undefined {
  const o = e as { code?: unknown; statusCode?: unknown; response?: { statusCode?: unknown } };
  for (const v of [o?.code, o?.statusCode, o?.response?.statusCode]) if (typeof v === 'number') return v;
  // the WebSocket handshake's refusal (client-node's exec)
  const m = /Unexpected server response: (\d{3})/.exec(String((e as Error)?.message ?? ''));
  return m ? Number(m[1]) : undefined;
}

function apiMessage(e: unknown): string {
  const body = (e as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      const m = (JSON.parse(body) as { message?: unknown }).message;
      if (typeof m === 'string') return m;
    } catch {
      // not JSON
    }
  }
  return (e as Error)?.message ?? String(e);
}

export class NodeDownloader {
  private readonly core: CoreV1Api;
  private readonly batch: BatchV1Api;
  private readonly exec: Exec;
  /** Helper pods created and not yet deleted: namespace/name. */
  private readonly helpers = new Map<string, CaptureRef>();

  constructor(private readonly o: NodeDownloaderOptions) {
    this.core = apiClient(o.kubeConfig, CoreV1Api, o.requestTimeoutMs ?? 0);
    this.batch = apiClient(o.kubeConfig, BatchV1Api, o.requestTimeoutMs ?? 0);
    this.exec = new Exec(o.kubeConfig);
  }

  /** Captures that have Jobs (label `retina.sh/app=capture`), in one namespace or all. */
  async listCaptures(namespace: string | undefined): Promise<CaptureRef[]> {
    const labelSelector = `${APP_LABEL}=capture`;
    let jobs;
    try {
      jobs = namespace === undefined ? await this.batch.listJobForAllNamespaces({ labelSelector }) : await this.batch.listNamespacedJob({ namespace, labelSelector });
    } catch (e) {
      throw this.apiError(e, `list capture Jobs ${namespace === undefined ? 'in all namespaces' : `in namespace ${namespace}`}`, 'list jobs');
    }
    const seen = new Map<string, CaptureRef>();
    for (const j of jobs.items) {
      const name = j.metadata?.labels?.[CAPTURE_NAME_LABEL];
      const ns = j.metadata?.namespace;
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
      pods = (await this.core.listNamespacedPod({ namespace: capture.namespace, labelSelector: `${CAPTURE_NAME_LABEL}=${capture.name},${APP_LABEL}!=${HELPER_APP}` })).items;
    } catch (e) {
      throw this.apiError(e, `list the pods of capture ${capture.namespace}/${capture.name}`, 'list pods');
    }
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

  /**
   * Fetches the node's tarball(s) of one capture into `dir` (one file per tarball, named as on the
   * node); returns the paths written. The helper pod is always deleted.
   */
  async download(f: NodeFile, dir: string): Promise<string[]> {
    const node = await this.readNode(f.node);
    const os = nodeOS(node);
    const cmds = this.commands(os, node, f.hostPath);
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
    const progress = new Progress(this.o.progress, `${name} (${f.node})`, size);
    const file = createWriteStream(part, { mode: 0o600 });
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb): void {
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
      if (progress.bytes !== size) {
        throw new DownloadError(`node ${f.node}: ${name}: received ${progress.bytes} bytes, the file has ${size}; the transfer was cut short`);
      }
      await rename(part, dest);
      return dest;
    } catch (e) {
      file.destroy();
      await rm(part, { force: true });
      throw e;
    }
  }

  private commands(os: NodeOS, node: V1Node, hostPath: string): OsCommands {
    if (os === 'windows') {
      // as Retina: C:\\host<dir>; a drive letter in the annotation (C:\\x or C:/x) is dropped from the mount path
      const mountPath = 'C:\\host' + hostPath.replace(/^[A-Za-z]:/, '').replaceAll('/', '\\').replace(/\\+$/, '');
      const file = (n: string): string => `${mountPath}\\${n}`;
      return {
        image: this.o.windowsImage ?? `${DEFAULT_WINDOWS_IMAGE_REPO}:${windowsLtsc(node)}`,
        mountPath,
        keepAlive: ['cmd', '/c', 'ping -n 3601 127.0.0.1 > nul'],
        dir: mountPath,
        file,
        list: (d) => ['cmd', '/c', 'dir', '/b', d],
        size: (p) => ['cmd', '/c', `for %I in ("${p}") do @echo %~zI`],
        read: (p) => ['cmd', '/c', 'type', p],
      };
    }
    // The container starts in `/` and the commands name the file relative to it: the same file in a
    // real container, and it keeps the test control plane's kwok (which runs exec as a local command in
    // its exec root) inside that root.
    const rel = 'host' + hostPath.replace(/\/+$/, '');
    return {
      image: this.o.linuxImage ?? DEFAULT_LINUX_IMAGE,
      mountPath: '/' + rel,
      workingDir: '/',
      keepAlive: ['sh', '-c', 'sleep 3600'],
      dir: rel,
      file: (n) => `${rel}/${n}`,
      list: (d) => ['ls', '-1', d],
      size: (p) => ['wc', '-c', p],
      read: (p) => ['cat', p],
    };
  }

  private async readNode(name: string): Promise<V1Node> {
    try {
      return await this.core.readNode({ name });
    } catch (e) {
      if (statusCode(e) === 404) throw new DownloadError(`node ${name} no longer exists: the capture files on it cannot be downloaded`);
      throw this.apiError(e, `read node ${name}`, 'get nodes');
    }
  }

  private async createHelper(f: NodeFile, c: OsCommands): Promise<string> {
    const trim = (v: string, n: number): string => v.slice(0, n).replace(/[^a-z0-9]+$/i, '');
    const name = `${trim(f.capture.name, 40)}-download-${randomBytes(3).toString('hex')}`;
    const ns = f.capture.namespace;
    // registered before the create: an abort during the request still deletes it
    this.helpers.set(`${ns}/${name}`, f.capture);
    try {
      await this.core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name, namespace: ns, labels: { [APP_LABEL]: HELPER_APP, 'retina.sh/download-for': trim(f.capture.name, 63) } },
          spec: {
            nodeName: f.node,
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 0,
            activeDeadlineSeconds: 3600,
            tolerations: [{ operator: 'Exists' }],
            containers: [
              {
                name: HELPER_CONTAINER,
                image: c.image,
                command: c.keepAlive,
                ...(c.workingDir ? { workingDir: c.workingDir } : {}),
                volumeMounts: [{ name: 'host', mountPath: c.mountPath, readOnly: true }],
              },
            ],
            volumes: [{ name: 'host', hostPath: { path: f.hostPath, type: 'Directory' } }],
          },
        },
      });
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
        p = await this.core.readNamespacedPod({ name, namespace });
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
      await this.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
      this.o.log(`deleted helper pod ${namespace}/${name}`);
    } catch (e) {
      if (statusCode(e) !== 404) {
        this.o.log(`could not delete helper pod ${namespace}/${name}: ${apiMessage(e)}; delete it with: kubectl delete pod -n ${namespace} ${name}`);
        return;
      }
    }
    this.helpers.delete(`${namespace}/${name}`);
  }

  private async execText(namespace: string, pod: string, command: string[], what: string): Promise<string> {
    const chunks: Buffer[] = [];
    const sink = new Writable({
      write(c: Buffer, _e, cb): void {
        chunks.push(c);
        cb();
      },
    });
    await this.execStream(namespace, pod, command, sink, what);
    return Buffer.concat(chunks).toString('utf8');
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
    let status: V1Status | undefined;
    const finished = new Promise<void>((resolve, reject) => {
      sink.once('finish', resolve);
      sink.once('error', reject);
    });
    let ws;
    try {
      ws = await this.exec.exec(namespace, pod, HELPER_CONTAINER, command, sink, stderr, null, false, (s) => {
        status = s;
      });
    } catch (e) {
      const code = statusCode(e);
      if (code === 403) throw new DownloadError(`cannot ${what}: exec into ${namespace}/${pod} was refused (403 Forbidden); the download needs RBAC 'create' on pods/exec in namespace ${namespace}`, { cause: e });
      throw new DownloadError(`cannot ${what}: exec into ${namespace}/${pod} failed: ${(e as Error).message ?? String(e)}`, { cause: e });
    }
    const socket = ws;
    const onAbort = (): void => socket.close();
    this.o.signal.addEventListener('abort', onAbort, { once: true });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('close', () => resolve());
        socket.once('error', (e: Error) => reject(e));
      });
      this.o.signal.throwIfAborted();
      const st = status as V1Status | undefined;
      if (!st) throw new DownloadError(`cannot ${what}: the exec stream closed without an exit status (connection lost?)`);
      if (st.status !== 'Success') {
        const exit = st.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
        const err = Buffer.concat(errChunks).toString('utf8').trim().slice(0, 500);
        throw new DownloadError(`cannot ${what}: ${command[0]} exited${exit ? ` with code ${exit}` : ''}: ${err || st.message || 'no message'}`);
      }
      if (!sink.writableEnded) sink.end();
      await finished;
    } finally {
      this.o.signal.removeEventListener('abort', onAbort);
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

function terminationMessage(p: V1Pod): string {
  const t = p.status?.containerStatuses?.find((c) => c.state?.terminated)?.state?.terminated;
  const msg = t?.message?.trim();
  return msg ? `: ${msg.slice(0, 300)}` : '';
}

function nodeOS(node: V1Node): NodeOS {
  const os = (node.status?.nodeInfo?.operatingSystem || node.metadata?.labels?.['kubernetes.io/os'] || 'linux').toLowerCase();
  return os.includes('windows') ? 'windows' : 'linux';
}

function windowsLtsc(node: V1Node): string {
  const img = (node.status?.nodeInfo?.osImage ?? '').toLowerCase();
  if (img.includes('2025')) return 'ltsc2025';
  if (img.includes('2019')) return 'ltsc2019';
  return 'ltsc2022';
}

/** client-node's API client for the current context, each request aborted after `timeoutMs` (0: makeApiClient's, no limit). */
function apiClient<T extends ApiType>(kc: KubeConfig, api: ApiConstructor<T>, timeoutMs: number): T {
  const cluster = kc.getCurrentCluster();
  if (!timeoutMs || !cluster) return kc.makeApiClient(api);
  return new api(createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [{
      pre: async (ctx) => {
        ctx.setSignal(AbortSignal.timeout(timeoutMs));
        return ctx;
      },
      post: async (res) => res,
    }],
  }));
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
