/**
 * The download helper pod, as Retina makes it: pinned to the capture's node, the capture's host
 * directory mounted read-only at `/host<hostPath>` (`C:\host<hostPath>` on Windows), a command that
 * keeps it alive while the files are read through `pods/exec`; and the commands that list, size and
 * read a file in it, per OS.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { CAPTURE_APP_LABEL } from '../job.js';

/** The helper pods' CAPTURE_APP_LABEL value (so the capture's own pods can be told from them). */
export const HELPER_APP = 'capture-download';
/** The label naming the capture a helper pod downloads from. */
export const DOWNLOAD_FOR_LABEL = 'retina.sh/download-for';
export const HELPER_CONTAINER = 'download';
export const DEFAULT_DOWNLOAD_IMAGE = 'mcr.microsoft.com/azurelinux/busybox:1.36';
export const DEFAULT_WINDOWS_DOWNLOAD_IMAGE_REPO = 'mcr.microsoft.com/windows/nanoserver';

export type NodeOS = 'linux' | 'windows';

export interface OsCommands {
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

export function nodeOS(node: V1Node): NodeOS {
  const os = (node.status?.nodeInfo?.operatingSystem || node.metadata?.labels?.['kubernetes.io/os'] || 'linux').toLowerCase();
  return os.includes('windows') ? 'windows' : 'linux';
}

function windowsLtsc(node: V1Node): string {
  const img = (node.status?.nodeInfo?.osImage ?? '').toLowerCase();
  if (img.includes('2025')) return 'ltsc2025';
  if (img.includes('2019')) return 'ltsc2019';
  return 'ltsc2022';
}

/** The helper's image and commands for the node's OS; `images` are the users' choices, if any. */
export function helperCommands(node: V1Node, hostPath: string, images: { readonly linux?: string | undefined; readonly windows?: string | undefined }): OsCommands {
  if (nodeOS(node) === 'windows') {
    // as Retina: C:\\host<dir>; a drive letter in the annotation (C:\\x or C:/x) is dropped from the mount path
    const mountPath = 'C:\\host' + hostPath.replace(/^[A-Za-z]:/, '').replaceAll('/', '\\').replace(/\\+$/, '');
    const file = (n: string): string => `${mountPath}\\${n}`;
    return {
      image: images.windows ?? `${DEFAULT_WINDOWS_DOWNLOAD_IMAGE_REPO}:${windowsLtsc(node)}`,
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
    image: images.linux ?? DEFAULT_DOWNLOAD_IMAGE,
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

/** `v` cut to `n` characters, without a trailing character a name may not end with. */
export const trimName = (v: string, n: number): string => v.slice(0, n).replace(/[^a-z0-9]+$/i, '');

/** The helper pod `name` on `node` that mounts `hostPath` for capture `capture`. */
export function helperPod(name: string, namespace: string, capture: string, node: string, hostPath: string, c: OsCommands): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { [CAPTURE_APP_LABEL]: HELPER_APP, [DOWNLOAD_FOR_LABEL]: trimName(capture, 63) } },
    spec: {
      nodeName: node,
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
      volumes: [{ name: 'host', hostPath: { path: hostPath, type: 'Directory' } }],
    },
  };
}
