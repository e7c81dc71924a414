/**
 * Adding one flow to one metric's series, given the flow's context tail: the per-op arithmetic of
 * kinds.ts. Series are found through the tail's slots (no hashing) and only on a miss through
 * `SeriesFamily.series`.
 */
import type { Flow } from '../../flow/index.js';
import { SEP, cleanLabelValue, type SeriesFamily } from '../series.js';
import type { PrefixedSeries, Tail } from './context.js';
import type { PodSide } from './forget.js';
import {
  OP_BYTES, OP_DNS_REQUEST, OP_DNS_RESPONSE, OP_DROP_BYTES, OP_DROP_PACKETS, OP_FLAGS, OP_PACKETS, dnsRequestPrefix, dnsResponsePrefix, type Kind,
} from './kinds.js';

export const REMOTE_DIRS = ['INGRESS', 'EGRESS', 'TRAFFIC_DIRECTION_UNKNOWN'] as const;
export const LOCAL_DIRS = ['egress', 'ingress'] as const;
/** Flag slots of TCP_FLAG_SLOTS. */
const F_FIN = 0, F_SYN = 1, F_SYNACK = 2, F_RST = 3, F_PSH = 4, F_ACK = 5, F_URG = 6, F_ECE = 7, F_CWR = 8, F_NS = 9;

/** One configured metric, as the hot path sees it. */
export interface Emitter {
  readonly family: SeriesFamily;
  readonly kind: Kind;
  readonly ttlMs: number;
  /** The sides whose labels identify a pod (forget.ts). */
  readonly podSides: readonly PodSide[];
}

/** One configured metric, compiled for the hot path. */
export interface Compiled extends Emitter {
  readonly op: number;
  readonly directional: boolean;
  readonly group: number;
  /** First of this metric's slots in every Tail. */
  readonly slot: number;
  /** Fixed-label prefix per slot: directions, or TCP flags. */
  readonly prefixes: readonly string[];
  /** Direction label values by direction slot. */
  readonly dirs: readonly string[];
  /** Drop metrics: reason → prefix per direction slot. */
  readonly reasons: Map<string, string[]>;
}

export function emit(e: Compiled, f: Readonly<Flow>, tail: Tail, dir: number, t: number): void {
  switch (e.op) {
    case OP_PACKETS: return bump(e, tail, dir, f.packets, t);
    case OP_BYTES: return bump(e, tail, dir, f.bytes, t);
    case OP_DROP_PACKETS: return bumpPrefixed(e, tail, dir, dropPrefix(e, f.dropReason, dir), f.packets, t);
    case OP_DROP_BYTES: return bumpPrefixed(e, tail, dir, dropPrefix(e, f.dropReason, dir), f.bytes, t);
    case OP_FLAGS: return flags(e, f, tail, t);
    case OP_DNS_REQUEST:
      if (f.dns !== undefined && !f.dns.isResponse) e.family.add(dnsRequestPrefix(f.dns), tail.key, 1, t);
      return;
    case OP_DNS_RESPONSE:
      if (f.dns !== undefined && f.dns.isResponse) e.family.add(dnsResponsePrefix(f.dns), tail.key, 1, t);
      return;
    default:
      return;
  }
}

/**
 * Adds to the series in slot `i` of this metric, found again through the tail when it is cached
 * (the tail was checked with `valid` for this flow). `touched` is kept only for metrics with a TTL.
 */
function bump(e: Compiled, tail: Tail, i: number, delta: number, t: number): void {
  const k = e.slot + i;
  const fam = e.family;
  let x = tail.index[k] as number;
  if (x < 0) {
    x = fam.index(e.prefixes[i] as string, tail.key, t);
    tail.index[k] = fam.isOverflow(x) ? -1 : x;
  }
  const values = fam.values;
  values[x] = (values[x] as number) + delta;
  if (e.ttlMs > 0) fam.touched[x] = t;
}

/** Prefixes a slot remembers: a connection's drops usually have one reason, sometimes a few. */
const PREFIXES_PER_SLOT = 4;

/** As #bump, for a slot whose prefix varies (a drop's reason): it keeps the series of its last few prefixes. */
function bumpPrefixed(e: Compiled, tail: Tail, i: number, prefix: string, delta: number, t: number): void {
  const k = e.slot + i;
  const fam = e.family;
  const lists = (tail.prefixed ??= new Array<PrefixedSeries[] | undefined>(tail.index.length).fill(undefined));
  let list = lists[k];
  if (list === undefined) lists[k] = list = [];
  let x = -1;
  for (let j = 0; j < list.length; j++) {
    const p = list[j] as PrefixedSeries;
    if (p.prefix === prefix) {
      x = p.index;
      break;
    }
  }
  if (x < 0) {
    x = fam.index(prefix, tail.key, t);
    if (!fam.isOverflow(x)) {
      if (list.length >= PREFIXES_PER_SLOT) list.shift();
      list.push({ prefix, index: x });
    }
  }
  const values = fam.values;
  values[x] = (values[x] as number) + delta;
  if (e.ttlMs > 0) fam.touched[x] = t;
}

function dropPrefix(e: Compiled, reason: string, dir: number): string {
  let p = e.reasons.get(reason);
  if (p === undefined) {
    if (e.reasons.size >= 4096) e.reasons.clear();
    const r = cleanLabelValue(reason || 'UNKNOWN') + SEP;
    p = e.dirs.map((d) => r + d);
    e.reasons.set(reason, p);
  }
  return p[dir] as string;
}

/**
 * adv_tcpflags_count: an aggregated report (tcpFlagCounts) adds each flag's own packet count;
 * a single packet, or a source without counts, adds `packets` to every flag in tcpFlags.
 */
function flags(e: Compiled, f: Readonly<Flow>, tail: Tail, t: number): void {
  if (f.proto !== 6) return;
  const counts = f.tcpFlagCounts;
  if (counts !== undefined) {
    for (let i = 0; i < 10; i++) {
      const n = counts[i] as number;
      if (n !== 0) bump(e, tail, i, n, t);
    }
    return;
  }
  const fl = f.tcpFlags;
  if (fl === 0) return;
  const d = f.packets;
  if (fl & 0x002) bump(e, tail, fl & 0x010 ? F_SYNACK : F_SYN, d, t);
  if (fl & 0x001) bump(e, tail, F_FIN, d, t);
  if (fl & 0x004) bump(e, tail, F_RST, d, t);
  if (fl & 0x008) bump(e, tail, F_PSH, d, t);
  if (fl & 0x010 && !(fl & 0x002)) bump(e, tail, F_ACK, d, t); // the ACK of a SYN-ACK is in SYNACK
  if (fl & 0x020) bump(e, tail, F_URG, d, t);
  if (fl & 0x040) bump(e, tail, F_ECE, d, t);
  if (fl & 0x080) bump(e, tail, F_CWR, d, t);
  if (fl & 0x100) bump(e, tail, F_NS, d, t);
}
