/** Windows host detection: build number and system libraries. */
import { existsSync } from 'node:fs';
import { arch, release } from 'node:os';
import { parseKernelVersion, type PlatformInfo } from '../capabilities.js';

export function detectWindows(): PlatformInfo {
  const kernelRelease = release();
  const systemRoot = 'C:\\Windows\\System32';
  return {
    os: 'windows',
    arch: arch(),
    kernelRelease,
    kernelVersion: parseKernelVersion(kernelRelease),
    btf: false,
    tc: false,
    tcx: false,
    ringBuffer: false,
    // HostProcess containers run as SYSTEM; privilege checks come with the Windows plugins.
    capabilities: [],
    hasTracepoint: () => false,
    hasFile: (p) => existsSync(p),
    hasLibrary: (name) => existsSync(`${systemRoot}\\${name}`),
  };
}
