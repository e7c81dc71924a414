/**
 * koffi for the bindings of src/ffi/linux and src/ffi/windows: its native module, loaded without
 * koffi's package entry point. That entry (index.js) also
 * defines koffi's download and unpack helpers, which require node:crypto, node:https and node:zlib
 * as it loads: about 8 MB of RSS (their code, and the node binary's pages they touch) in an agent
 * that uses none of them (bench/agent/footprint.bench.ts). What the entry adds to the native exports
 * is deprecated aliases only (koffi.handle, koffi.callback, lib.cdecl, ...), which nothing here uses.
 *
 * Where the native module is: beside the bundle's chunks (hack/bundle.mjs copies it to
 * build/koffi/<triplet>/koffi.node), else in the koffi package (a checkout's node_modules). When
 * neither holds it (a triplet koffi ships elsewhere, e.g. musl), koffi's own entry finds it.
 * The triplet is the host's, as koffi's entry computes it from process.platform, not an OS folder's:
 * the Windows bindings' struct layouts are also built and checked on Linux (test/windows/layout.test.ts).
 * So this one file outside src/ffi/<os> names koffi and reads process.platform (eslint.config.js).
 */
import type koffiModule from 'koffi';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export class KoffiLoadError extends Error {
  override readonly name = 'KoffiLoadError';
}

/** `arch`: for tests; koffi's triplet is `<process.platform>_<arch>`. */
export function loadKoffiNative<K>(arch: string = process.arch): K {
  const triplet = `${process.platform}_${arch}`;
  const load = createRequire(import.meta.url);
  const candidates = [join(dirname(fileURLToPath(import.meta.url)), 'build', 'koffi', triplet, 'koffi.node')];
  let pkgVersion: string | undefined;
  try {
    const pkgFile = load.resolve('koffi/package.json');
    pkgVersion = (load(pkgFile) as { version?: string }).version;
    candidates.push(join(dirname(pkgFile), 'build', 'koffi', triplet, 'koffi.node'));
  } catch {
    // the bundle: no node_modules, the native module sits beside the chunks
  }
  const file = candidates.find((f) => existsSync(f));
  if (file === undefined) return load('koffi') as K;
  const native = load(file) as { version?: unknown };
  if (pkgVersion !== undefined && native.version !== pkgVersion) {
    throw new KoffiLoadError(`koffi: native module ${file} is version ${String(native.version)}, the koffi package ${pkgVersion}`);
  }
  return native as K;
}

/**
 * Loaded on first use, not when this module is evaluated: the Linux agent's start-up snapshot
 * (src/cli/agent-snapshot.ts) holds the plugin list and its bindings, and a V8 snapshot cannot hold a
 * native module. The bindings use koffi when a plugin starts, never per packet (what they call per
 * batch are the functions koffi returned, not this object's properties).
 */
let native: typeof koffiModule | undefined;
const koffi: typeof koffiModule = new Proxy({} as typeof koffiModule, {
  get: (_t, key) => Reflect.get((native ??= loadKoffiNative<typeof koffiModule>()) as object, key),
});
// The koffi.* types the bindings name, beside the value (types only, so no runtime namespace).
// eslint-disable-next-line @typescript-eslint/no-namespace
declare namespace koffi {
  type IKoffiCType = koffiModule.IKoffiCType;
  type IKoffiLib = koffiModule.IKoffiLib;
}
export default koffi;
