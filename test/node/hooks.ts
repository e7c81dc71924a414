/**
 * The agent's hooks on the real node, for the lifecycle cases of the real-node suite: the programs
 * the agent pod's processes hold, the tc filters of ours on the node's interfaces (host network
 * namespace: the bridge, the pods' host-side veths, the default route's device, lo) and the TCX links
 * to the agent's programs. Two snapshots compare as one "set" when their shapes (names, interfaces,
 * directions, counts) are equal; ids differ between runs.
 */
import { readFileSync } from 'node:fs';
import { listTcxLinks, shippedProgramNames } from '../../src/ffi/linux/inventory.js';
import { bpfIdsOf, sh } from '../ebpf/netns.js';
import { BRIDGE } from './node.js';
import { containerCgroup, type Pod } from './workloads.js';

let names: ReadonlySet<string> | undefined;
/** The kernel names (15 characters) of every program this package ships. */
export function ourProgramNames(): ReadonlySet<string> {
  names ??= new Set([...shippedProgramNames().values()].flat());
  return names;
}

/** The host pids of the pod's first container (its memory cgroup's procs). */
export function podPids(pod: Pod): number[] {
  return readFileSync(`${containerCgroup(pod, 'memory')}/cgroup.procs`, 'utf8').trim().split('\n').filter(Boolean).map(Number);
}

/** The node's interfaces in the host network namespace that the agent may hook: name -> ifindex. */
export function nodeInterfaces(): Map<string, number> {
  const links = JSON.parse(sh('ip', ['-j', 'link', 'show'])) as { ifindex: number; ifname: string; master?: string }[];
  const defaultDev = /dev (\S+)/.exec(sh('ip', ['-4', 'route', 'show', 'default']))?.[1];
  return new Map(links.filter((l) => l.ifname === BRIDGE || l.master === BRIDGE || l.ifname === defaultDev || l.ifname === 'lo').map((l) => [l.ifname, l.ifindex]));
}

export interface Hooks {
  /** Program ids the agent's processes hold. */
  readonly progIds: readonly number[];
  /** `<iface> <direction> tc <program>` per tc filter of ours, `<iface> <direction> tcx <program>` per TCX link to an agent program; sorted. */
  readonly attached: readonly string[];
  /** The names of the programs the agent holds, sorted (one entry per program). */
  readonly progNames: readonly string[];
  /** tc filters of ours whose program the agent does not hold (a killed run's). */
  readonly strayFilters: readonly string[];
}

/** The hooks of ours on the node now, with the agent pod's processes `pids`. */
export function hooksOnNode(pids: readonly number[]): Hooks {
  const ours = ourProgramNames();
  const progIds = [...new Set(pids.flatMap((p) => bpfIdsOf(p).progs))].sort((a, b) => a - b);
  const held = new Set(progIds);
  const progs = new Map((JSON.parse(sh('bpftool', ['-j', 'prog', 'show'])) as { id: number; name?: string }[]).map((p) => [p.id, p.name ?? '']));
  const attached: string[] = [];
  const strayFilters: string[] = [];
  const ifaces = nodeInterfaces();
  for (const [ifname] of ifaces) {
    for (const dir of ['ingress', 'egress']) {
      let filters: { kind?: string; options?: { prog?: { id: number; name?: string } } }[] = [];
      try {
        filters = JSON.parse(sh('tc', ['-j', 'filter', 'show', 'dev', ifname, dir]) || '[]') as typeof filters;
      } catch {
        continue; // the interface went away meanwhile
      }
      for (const f of filters) {
        const prog = f.options?.prog;
        if (f.kind !== 'bpf' || !prog) continue;
        const name = progs.get(prog.id) ?? prog.name ?? '';
        if (!ours.has(name)) continue;
        const line = `${ifname} ${dir} tc ${name}`;
        if (held.has(prog.id)) attached.push(line);
        else strayFilters.push(`${line} (program id ${prog.id})`);
      }
    }
  }
  const byIndex = new Map([...ifaces].map(([n, i]) => [i, n]));
  for (const l of listTcxLinks()) {
    const ifname = byIndex.get(l.ifindex);
    if (ifname && held.has(l.progId)) attached.push(`${ifname} ${l.direction} tcx ${progs.get(l.progId) ?? l.progId}`);
  }
  return { progIds, attached: attached.sort(), progNames: progIds.map((id) => progs.get(id) ?? String(id)).sort(), strayFilters };
}

/** Of `ids`, the programs the kernel still has. */
export function stillLoaded(ids: readonly number[]): number[] {
  const now = new Set((JSON.parse(sh('bpftool', ['-j', 'prog', 'show'])) as { id: number }[]).map((p) => p.id));
  return ids.filter((id) => now.has(id));
}
