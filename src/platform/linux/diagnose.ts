/**
 * What only Linux can say in `retina-agent diagnose`: kernel facts, the interfaces of this network
 * namespace, the tc attachments on them (clsact filters and TCX links, ours told apart from others'
 * by program name), and our BPF programs with their maps' fill levels. Read only: rtnetlink dumps,
 * sysfs, and BPF object ids walked with bpf_obj_get_info_by_fd; nothing is loaded or attached.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { basename } from 'node:path';
import {
  listPrograms,
  listTcFilters,
  listTcxLinks,
  mapById,
  openLinkDumper,
  progNameById,
  shippedProgramNames,
  type LinkInfo,
} from '../../ffi/linux/index.js';
import type { PlatformInfo } from '../capabilities.js';
import type { DiagnoseSection } from '../diagnose.js';

/** Tracepoints our plugins use (dropreason, tcpretrans). */
const TRACEPOINTS = ['skb/kfree_skb', 'tcp/tcp_retransmit_skb'];

/** A sysfs attribute of `ifname`, or undefined when it cannot be read (virtual devices have no speed). */
function sysfs(ifname: string, attr: string): string | undefined {
  try {
    return readFileSync(`/sys/class/net/${ifname}/${attr}`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function driverOf(ifname: string): string | undefined {
  try {
    return basename(readlinkSync(`/sys/class/net/${ifname}/device/driver`));
  } catch {
    return undefined;
  }
}

function links(): LinkInfo[] {
  const dumper = openLinkDumper();
  try {
    return dumper.dump();
  } finally {
    dumper[Symbol.dispose]();
  }
}

/** Every interface: netlink (index, name, kind), sysfs (MAC, MTU, state, driver, speed), addresses. */
export function interfaces(): unknown[] {
  const addrs = networkInterfaces();
  return links().map((l) => {
    const speed = Number(sysfs(l.name, 'speed'));
    return {
      index: l.ifindex, name: l.name, kind: l.kind || undefined, mac: sysfs(l.name, 'address'), mtu: Number(sysfs(l.name, 'mtu') ?? NaN) || undefined,
      state: sysfs(l.name, 'operstate'), driver: driverOf(l.name), speedMbps: Number.isFinite(speed) && speed > 0 ? speed : undefined,
      addresses: (addrs[l.name] ?? []).map((a) => a.cidr ?? a.address),
    };
  });
}

/** Which program names are ours: every program in the objects we ship. */
function ourNames(): { names: Set<string>; byObject: Map<string, string[]> } {
  const byObject = shippedProgramNames();
  return { names: new Set([...byObject.values()].flat()), byObject };
}

/** clsact filters (both directions of every interface) and TCX links, each marked ours or not. */
export function tcAttachments(): unknown {
  const { names } = ourNames();
  const nameCache = new Map<number, string | undefined>();
  const nameOf = (id: number): string | undefined => {
    if (!nameCache.has(id)) nameCache.set(id, progNameById(id));
    return nameCache.get(id);
  };
  const all = links();
  const byIndex = new Map(all.map((l) => [l.ifindex, l.name]));
  const clsact = [];
  for (const l of all) {
    for (const direction of ['ingress', 'egress'] as const) {
      for (const f of listTcFilters(l.ifindex, direction)) {
        if (f.handle === 0) continue;
        const program = f.progId === undefined ? undefined : nameOf(f.progId);
        clsact.push({
          interface: l.name, direction, kind: f.kind, priority: f.priority, handle: f.handle, chain: f.chain,
          programId: f.progId, program, ours: f.kind === 'bpf' && program !== undefined && names.has(program),
        });
      }
    }
  }
  const tcx = listTcxLinks().map((k) => {
    const program = nameOf(k.progId);
    return { interface: byIndex.get(k.ifindex) ?? `ifindex ${k.ifindex}`, direction: k.direction, linkId: k.id, programId: k.progId, program, ours: program !== undefined && names.has(program) };
  });
  return { clsact, tcx };
}

/** Our loaded programs (by name) and their maps with fill levels. */
export function bpfPrograms(): unknown {
  const { names, byObject } = ourNames();
  const objectOf = new Map<string, string>();
  for (const [obj, progs] of byObject) for (const p of progs) objectOf.set(p, obj);
  const programs = listPrograms((n) => names.has(n));
  const mapIds = [...new Set(programs.flatMap((p) => p.mapIds))].sort((a, b) => a - b);
  const maps = mapIds.flatMap((id) => {
    const m = mapById(id);
    if (!m) return [];
    const fill = m.entries === undefined || m.maxEntries === 0 ? undefined : Math.round((m.entries / m.maxEntries) * 1000) / 10;
    return [{ ...m, fillPercent: fill }];
  });
  return {
    programs: programs.map((p) => ({ id: p.id, name: p.name, object: objectOf.get(p.name), type: p.type, typeName: p.typeName, mapIds: p.mapIds })),
    maps,
  };
}

export function kernelFacts(info: PlatformInfo): unknown {
  return {
    release: info.kernelRelease, version: info.kernelVersion.join('.'), arch: info.arch, btf: info.btf, tcClsact: info.tc, tcx: info.tcx,
    ringBuffer: info.ringBuffer, libbpf: info.hasLibrary('libbpf.so.1'), capabilities: info.capabilities,
    tracepoints: Object.fromEntries(TRACEPOINTS.map((t) => [t, info.hasTracepoint(t)])),
  };
}

export function osSections(info: PlatformInfo): readonly DiagnoseSection[] {
  return [
    { name: 'kernel', collect: () => kernelFacts(info) },
    { name: 'interfaces', collect: interfaces },
    { name: 'tc', collect: tcAttachments },
    { name: 'bpf', collect: bpfPrograms },
  ];
}
