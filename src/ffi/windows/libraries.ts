/**
 * The one table of Windows DLLs the bindings load, and the test seam: `RETINATS_DLL_<KEY>` (e.g.
 * RETINATS_DLL_COMPUTENETWORK) points one binding at another file (the fakes under test/windows/fakes)
 * without touching the code that calls it. Not `RETINA_*`: those are configuration keys, and the
 * agent warns about ones it does not declare. Libraries are loaded when a binding is opened (in a
 * plugin's start), never at import time.
 */
import koffi from '../koffi.js';

export const DLLS = Object.freeze({
  computenetwork: 'computenetwork.dll',
  vmcompute: 'vmcompute.dll',
  iphlpapi: 'iphlpapi.dll',
  ole32: 'ole32.dll',
  advapi32: 'advapi32.dll',
  kernel32: 'kernel32.dll',
});

export type DllKey = keyof typeof DLLS;

/** The file `key` loads: the table's name, or the override from the environment. */
export function dllPath(key: DllKey, env: NodeJS.ProcessEnv = process.env): string {
  return env[`RETINATS_DLL_${key.toUpperCase()}`] || DLLS[key];
}

const loaded = new Map<string, koffi.IKoffiLib>();

/** Loads `key` once per process; throws an error naming the DLL when it cannot be loaded. */
export function loadDll(key: DllKey): koffi.IKoffiLib {
  const path = dllPath(key);
  const hit = loaded.get(path);
  if (hit) return hit;
  let lib: koffi.IKoffiLib;
  try {
    lib = koffi.load(path);
  } catch (e) {
    throw new Error(`cannot load ${path}`, { cause: e });
  }
  loaded.set(path, lib);
  return lib;
}
