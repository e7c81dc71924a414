/** What the platform layer found out about this host; plugins' hooks are checked against it. */
import type { HookSpec, OsName } from '../plugin/index.js';

export interface PlatformInfo {
  readonly os: OsName;
  readonly arch: string;
  /** `uname -r` on Linux, the build number on Windows. */
  readonly kernelRelease: string;
  readonly kernelVersion: readonly [number, number, number];
  /** Kernel BTF at /sys/kernel/btf/vmlinux (CO-RE, tp_btf). */
  readonly btf: boolean;
  /** tc clsact qdisc support (sch_ingress present or built in). */
  readonly tc: boolean;
  /** TCX attach (Linux 6.6+). */
  readonly tcx: boolean;
  /** BPF ring buffer (Linux 5.8+). */
  readonly ringBuffer: boolean;
  /** Effective capabilities by name (CAP_BPF, CAP_NET_ADMIN, ...), or ['Administrator'] on Windows. */
  readonly capabilities: readonly string[];
  /** Tracepoints known to exist, checked lazily by `hasTracepoint`. */
  hasTracepoint(target: string): boolean;
  hasFile(path: string): boolean;
  hasLibrary(name: string): boolean;
}

/** Describes each hook of `hooks` this host lacks; empty when all are there. */
export function missingHooks(hooks: readonly HookSpec[], info: PlatformInfo): string[] {
  const missing: string[] = [];
  for (const h of hooks) {
    switch (h.kind) {
      case 'file':
        if (!h.optional && !info.hasFile(h.path)) missing.push(`file ${h.path}`);
        break;
      case 'tracepoint':
        if (!info.hasTracepoint(h.target)) missing.push(`tracepoint ${h.target}`);
        break;
      case 'btf':
        if (!info.btf) missing.push('kernel BTF (/sys/kernel/btf/vmlinux)');
        break;
      case 'tc':
        if (!info.tc) missing.push('tc clsact qdisc');
        break;
      case 'capability':
        if (!info.capabilities.includes(h.name)) missing.push(`capability ${h.name}`);
        break;
      case 'library':
        if (!info.hasLibrary(h.name)) missing.push(`library ${h.name}`);
        break;
    }
  }
  return missing;
}

export function parseKernelVersion(release: string): readonly [number, number, number] {
  const m = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(release);
  return [Number(m?.[1] ?? 0), Number(m?.[2] ?? 0), Number(m?.[3] ?? 0)];
}

export function kernelAtLeast(v: readonly [number, number, number], major: number, minor: number): boolean {
  return v[0] > major || (v[0] === major && v[1] >= minor);
}
