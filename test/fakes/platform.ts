import type { PlatformInfo } from '../../src/platform/index.js';

/** A host description for tests that must not depend on the machine. */
export function fakePlatform(over: Partial<PlatformInfo> = {}): PlatformInfo {
  return {
    os: 'linux', arch: 'x64', kernelRelease: '6.18.0', kernelVersion: [6, 18, 0], btf: true, tc: true, tcx: true, ringBuffer: true,
    capabilities: ['CAP_BPF', 'CAP_NET_ADMIN', 'CAP_SYS_ADMIN'],
    hasTracepoint: () => true, hasFile: () => true, hasLibrary: () => true,
    ...over,
  };
}
