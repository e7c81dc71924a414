/**
 * tc filters as `tc -j filter show` reports them, for the tests where our clsact filters share a
 * qdisc with a program that is not ours (foreign.bpf.c, standing in for a CNI): which filters are
 * ours, attaching the foreign ones, and reading the foreign program's packet count.
 */
import { Netns, sh } from './netns.js';

export interface ShownFilter {
  readonly kind: string;
  readonly pref: number;
  readonly handle: string;
  readonly progId: number | undefined;
  readonly progName: string | undefined;
}

/** The filters (not the per-priority headers) on clsact `dir` of `ifname` in `ns`. */
export function filters(ns: Netns, ifname: string, dir: 'ingress' | 'egress'): ShownFilter[] {
  const rows = JSON.parse(ns.run('tc', ['-j', 'filter', 'show', 'dev', ifname, dir]) || '[]') as {
    kind: string; pref: number; options?: { handle?: string; prog?: { id: number; name: string } };
  }[];
  return rows.filter((r) => r.options).map((r) => ({
    kind: r.kind, pref: r.pref, handle: r.options?.handle ?? '', progId: r.options?.prog?.id, progName: r.options?.prog?.name,
  }));
}

/** Our programs' kernel names (15 characters at most) start with "packet" (packetforward_i, packetparser_en, ...). */
export const isOurs = (f: ShownFilter): boolean => f.kind === 'bpf' && (f.progName ?? '').startsWith('packet');

/** The kernel names of our filters on `dir` of `ifname`, sorted. */
export const ourNames = (ns: Netns, ifname: string, dir: 'ingress' | 'egress'): string[] =>
  filters(ns, ifname, dir).filter(isOurs).map((f) => f.progName ?? '').sort();

/** Attaches foreign.bpf.o (direct action, returns TC_ACT_UNSPEC) at priority `pref`; returns its program id. */
export function attachForeignBpf(ns: Netns, obj: string, ifname: string, dir: 'ingress' | 'egress', pref: number): number {
  ns.run('tc', ['filter', 'add', 'dev', ifname, dir, 'pref', String(pref), 'bpf', 'da', 'obj', obj, 'sec', 'tc']);
  const f = filters(ns, ifname, dir).find((x) => x.pref === pref && x.progName === 'rtbpf_foreign');
  if (f?.progId === undefined) throw new Error(`the foreign filter is not on ${dir} of ${ifname}`);
  return f.progId;
}

/** A u32 filter that matches everything into class 1:1 (a foreign filter that is not BPF). */
export function attachForeignU32(ns: Netns, ifname: string, dir: 'ingress' | 'egress', pref: number): void {
  ns.run('tc', ['filter', 'add', 'dev', ifname, dir, 'pref', String(pref), 'u32', 'match', 'u32', '0', '0', 'classid', '1:1']);
}

/** How many packets foreign.bpf.o's program `progId` has seen (its .bss `packets`). */
export function foreignPackets(progId: number): number {
  const prog = JSON.parse(sh('bpftool', ['-j', 'prog', 'show', 'id', String(progId)])) as { map_ids?: number[] };
  const mapId = prog.map_ids?.[0];
  if (mapId === undefined) throw new Error(`program ${progId} has no map`);
  const [entry] = JSON.parse(sh('bpftool', ['-j', 'map', 'dump', 'id', String(mapId)])) as { formatted?: { value?: { '.bss'?: { packets: number }[] } } }[];
  const packets = entry?.formatted?.value?.['.bss']?.[0]?.packets;
  if (packets === undefined) throw new Error(`cannot read the foreign program's packet count (map ${mapId})`);
  return packets;
}

export const hasClsact = (ns: Netns, ifname: string): boolean => ns.run('tc', ['qdisc', 'show', 'dev', ifname]).includes('clsact');
