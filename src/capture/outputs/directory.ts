/**
 * The file outputs: hostPath (a folder of the node, mounted at the same path in the pod) and the
 * PVC's mount. The hostPath folder must stay under its base folder once every symlink is resolved
 * (`..` is refused outright, and a symlink anywhere on the way out of the base is refused); the
 * tarball is written under a temporary name that cannot exist yet (O_EXCL, so never through a
 * planted symlink) and renamed into place.
 */
import { constants } from 'node:fs';
import { copyFile, lstat, mkdir, realpath, rename, rm, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { CaptureError, type Output } from './output.js';

const under = (child: string, parent: string): boolean => {
  const r = relative(parent, child);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
};

/** The deepest folder of `p` that exists (p itself when it does). */
async function deepestExisting(p: string): Promise<string> {
  for (let d = p; ; d = dirname(d)) {
    if (await lstat(d).then(() => true, () => false)) return d;
    if (dirname(d) === d) return d;
  }
}

/**
 * Checks HOSTPATH (`variable` names it in errors) against `base` (its own value when no base is
 * given) and creates it; resolves with its real path.
 */
export async function checkHostPath(dir: string, base: string | undefined, variable = 'HOSTPATH'): Promise<string> {
  if (!isAbsolute(dir)) throw new CaptureError(`${variable}=${JSON.stringify(dir)} is not an absolute path`);
  if (dir.split(/[\\/]+/).includes('..')) throw new CaptureError(`${variable}=${JSON.stringify(dir)} holds '..': refused (the folder must stay under ${base ?? 'itself'})`);
  const target = resolve(dir);
  const baseDir = resolve(base ?? target);
  if (!under(target, baseDir)) throw new CaptureError(`${variable}=${JSON.stringify(dir)} is not under the host path base folder ${baseDir}`);
  await mkdir(baseDir, { recursive: true }).catch((e: Error) => {
    throw new CaptureError(`cannot create the host path base folder ${baseDir}: ${e.message}`);
  });
  const realBase = await realpath(baseDir);
  // Before creating anything: what exists of the path must not lead out of the base through a symlink.
  const existing = await deepestExisting(target);
  const realExisting = await realpath(existing);
  if (!under(realExisting, realBase) || relative(realBase, realExisting) !== relative(baseDir, existing)) {
    throw new CaptureError(`${variable}=${JSON.stringify(dir)} leads out of ${baseDir} through a symlink (${existing} is ${realExisting}): refused`);
  }
  await mkdir(target, { recursive: true });
  const real = await realpath(target);
  if (!under(real, realBase)) throw new CaptureError(`${variable}=${JSON.stringify(dir)} resolves to ${real}, outside ${baseDir}: refused`);
  if (!(await stat(real)).isDirectory()) throw new CaptureError(`${variable}=${JSON.stringify(dir)} is not a folder`);
  return real;
}

/** Copies `file` into `dir` as `name`: a fresh temporary file (never an existing path or symlink), then a rename. */
export async function copyInto(file: string, dir: string, name: string): Promise<string> {
  if (name.includes('/') || name.includes(sep) || name === '..') throw new CaptureError(`bad file name ${JSON.stringify(name)}`);
  const tmp = join(dir, `.${name}.${process.pid}.partial`);
  await rm(tmp, { force: true });
  try {
    await copyFile(file, tmp, constants.COPYFILE_EXCL);
    await rename(tmp, join(dir, name));
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return join(dir, name);
}

export function hostPathOutput(dir: string, base: string | undefined): Output & { prepare(): Promise<void> } {
  let real: string | undefined;
  return {
    name: 'hostPath',
    async prepare() {
      real = await checkHostPath(dir, base);
    },
    async deliver(file, name) {
      real ??= await checkHostPath(dir, base);
      return copyInto(file, real, name);
    },
  };
}

export function pvcOutput(mount: string): Output & { prepare(): Promise<void> } {
  return {
    name: 'persistentVolumeClaim',
    async prepare() {
      const s = await stat(mount).catch(() => undefined);
      if (!s?.isDirectory()) throw new CaptureError(`PERSISTENT_VOLUME_CLAIM=${JSON.stringify(mount)}: the volume is not mounted there (no such folder)`);
    },
    deliver: (file, name) => copyInto(file, mount, name),
  };
}
