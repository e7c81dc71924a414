/** Linux host detection: kernel version, BTF, tracepoints, tc, privileges. */
import { existsSync, readFileSync } from 'node:fs';
import { arch, release } from 'node:os';
import { kernelAtLeast, parseKernelVersion, type PlatformInfo } from '../capabilities.js';

const CAP_NAMES: Record<number, string> = {
  0: 'CAP_CHOWN', 1: 'CAP_DAC_OVERRIDE', 12: 'CAP_NET_ADMIN', 13: 'CAP_NET_RAW', 14: 'CAP_IPC_LOCK',
  19: 'CAP_SYS_PTRACE', 21: 'CAP_SYS_ADMIN', 24: 'CAP_SYS_RESOURCE', 38: 'CAP_PERFMON', 39: 'CAP_BPF',
};

/** Reads CapEff from /proc/self/status and names the bits we care about. */
export function effectiveCapabilities(statusText: string): string[] {
  const m = /^CapEff:\s*([0-9a-fA-F]+)$/m.exec(statusText);
  if (!m) return [];
  const bits = BigInt('0x' + m[1]);
  return Object.entries(CAP_NAMES)
    .filter(([bit]) => (bits >> BigInt(bit)) & 1n)
    .map(([, name]) => name);
}

const TRACEFS = ['/sys/kernel/tracing', '/sys/kernel/debug/tracing'];
const BTF_PATH = '/sys/kernel/btf/vmlinux';
const LIB_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu', '/lib/aarch64-linux-gnu', '/lib64', '/lib'];

export function detectLinux(): PlatformInfo {
  const kernelRelease = release();
  const kernelVersion = parseKernelVersion(kernelRelease);
  const btf = existsSync(BTF_PATH);
  let btfTracepoints: Set<string> | undefined;
  const tpCache = new Map<string, boolean>();
  let caps: string[] = [];
  try {
    caps = effectiveCapabilities(readFileSync('/proc/self/status', 'utf8'));
  } catch {
    caps = [];
  }
  return {
    os: 'linux',
    arch: arch(),
    kernelRelease,
    kernelVersion,
    btf,
    tc: hasTcClsact(),
    tcx: kernelAtLeast(kernelVersion, 6, 6),
    ringBuffer: kernelAtLeast(kernelVersion, 5, 8),
    capabilities: caps,
    hasTracepoint(target) {
      // target is `subsystem/event` (skb/kfree_skb). tracefs may not be mounted (it is not needed
      // for tp_btf), so fall back to the BTF type `btf_trace_<event>` that tp_btf attaches through.
      const hit = tpCache.get(target);
      if (hit !== undefined) return hit;
      let found = TRACEFS.some((d) => existsSync(`${d}/events/${target}`));
      if (!found && btf) {
        btfTracepoints ??= tracepointsInBtf(readFileSync(BTF_PATH));
        found = btfTracepoints.has(target.split('/').pop() ?? target);
      }
      tpCache.set(target, found);
      return found;
    },
    hasFile: (p) => existsSync(p),
    hasLibrary: (name) => LIB_DIRS.some((d) => existsSync(`${d}/${name}`)),
  };
}

/**
 * The event names of every `btf_trace_<event>` type in the kernel's BTF string section. Kept as a
 * small set so the 5 MB file is not held for the life of the process.
 */
export function tracepointsInBtf(bytes: Buffer): Set<string> {
  const out = new Set<string>();
  const marker = Buffer.from('\0btf_trace_');
  for (let i = bytes.indexOf(marker); i >= 0; i = bytes.indexOf(marker, i + 1)) {
    const start = i + marker.length;
    const end = bytes.indexOf(0, start);
    if (end < 0) break;
    out.add(bytes.toString('latin1', start, end));
    i = end - 1;
  }
  return out;
}

/** clsact lives in sch_ingress: built in, or a loadable module for this kernel. */
function hasTcClsact(): boolean {
  if (existsSync('/sys/module/sch_ingress')) return true;
  try {
    const dir = `/lib/modules/${release()}`;
    if (!existsSync(dir)) return existsSync('/proc/net/psched');
    const builtin = existsSync(`${dir}/modules.builtin`) ? readFileSync(`${dir}/modules.builtin`, 'utf8') : '';
    if (builtin.includes('sch_ingress')) return true;
    const dep = existsSync(`${dir}/modules.dep`) ? readFileSync(`${dir}/modules.dep`, 'utf8') : '';
    return dep.includes('sch_ingress');
  } catch {
    return existsSync('/proc/net/psched');
  }
}
