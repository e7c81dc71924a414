/**
 * packetparser's maps and their layouts (native-linux/packetparser/packetparser.bpf.c): the filter
 * map of IPs of interest, kept in step with ctx.interest, and its generation; the connection table, which the kernel
 * sweep (packetparser_sweep) walks, and the sweep's result.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { MapWriter } from '../../../ffi/linux/index.js';

export const EVENTS_MAP = 'retina_packetparser_events';
export const LOST_MAP = 'retina_packetparser_lost';
export const FILTER_MAP = 'retina_packetparser_filter';
/** The filter's generation (one u32), one more after each sync that changed the filter: see syncFilter's caller. */
export const FILTER_GEN_MAP = 'retina_packetparser_filter_gen';
export const CONNTRACK_MAP = 'retina_packetparser_conntrack';
export const SWEEP_RESULT_MAP = 'retina_packetparser_sweep_result';
/** Entries the programs inserted and deleted at a close, per CPU (struct pp_ct_count): table.ts. */
export const CT_COUNT_MAP = 'retina_packetparser_ct_count';
export const SWEEP_PROGRAM = 'packetparser_sweep';
/** struct pp_ct_key's size: the keyed sweep (packetparser_sweep_keys) takes the keys in its input. */
export const CT_KEY_SIZE = 44;
/** Keys per run of the keyed sweep (PP_SWEEP_KEYS) and its input's header (PP_SWEEP_HDR). */
export const SWEEP_KEYS_PER_RUN = 32;
const SWEEP_KEYS_HDR = 4;

/** struct pp_ct_value: checked against the loaded map, so a stale object is caught at start. */
export const CT_VALUE_SIZE = 208;

/** The filter map's key: IPv6 as is, IPv4 v4-mapped (::ffff:a.b.c.d); undefined when not an address. */
export function ipKey(ip: string): Buffer | undefined {
  const s = ip.includes('%') ? ip.slice(0, ip.indexOf('%')) : ip;
  const out = Buffer.alloc(16);
  if (isIPv4(s)) {
    out[10] = 0xff;
    out[11] = 0xff;
    s.split('.').forEach((x, i) => (out[12 + i] = Number(x)));
    return out;
  }
  if (!isIPv6(s)) return undefined;
  let text = s;
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    tail = text.slice(lastColon + 1).split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head = '', rest] = text.split('::');
  const words = (part: string): number[] => (part ? part.split(':').map((w) => parseInt(w, 16)) : []);
  const h = words(head);
  const r = rest === undefined ? [] : words(rest);
  const all = rest === undefined ? h : [...h, ...new Array<number>(8 - h.length - r.length).fill(0), ...r];
  all.forEach((w, i) => out.writeUInt16BE(w, i * 2));
  if (tail.length === 4) tail.forEach((b, i) => (out[12 + i] = b));
  return out;
}

export interface FilterSync {
  readonly added: number;
  readonly removed: number;
  /** Addresses left out because the map is full (filterMapMaxEntries). */
  readonly overflow: number;
  /** Strings that are not IP addresses. */
  readonly invalid: number;
}

/**
 * Makes the filter map hold `desired` (at most `max` of them): deletes what went, adds what is new.
 * `current` (address key hex → key) mirrors the map and is updated in place.
 */
export function syncFilter(map: MapWriter, current: Map<string, Buffer>, desired: ReadonlySet<string>, max: number): FilterSync {
  const want = new Map<string, Buffer>();
  let invalid = 0;
  for (const ip of desired) {
    const k = ipKey(ip);
    if (!k) invalid++;
    else want.set(k.toString('hex'), k);
  }
  let removed = 0;
  for (const [hex, k] of current) {
    if (want.has(hex)) continue;
    map.delete(k);
    current.delete(hex);
    removed++;
  }
  let added = 0;
  let overflow = 0;
  const one = Buffer.from([1]);
  for (const [hex, k] of want) {
    if (current.has(hex)) continue;
    if (current.size >= max) {
      overflow++;
      continue;
    }
    map.put(k, one);
    current.set(hex, k);
    added++;
  }
  return { added, removed, overflow, invalid };
}

/** The result of one sweep (struct pp_sweep_result in retina_packetparser_sweep_result). */
export interface SweepResult {
  readonly packetsTx: number;
  readonly packetsRx: number;
  readonly bytesTx: number;
  readonly bytesRx: number;
  /** Connections kept. */
  readonly live: number;
  /** Connections deleted (expired). */
  readonly expired: number;
  /** Records the sweep wrote. */
  readonly reported: number;
  /** Records the ring had no room for (also in the lost map). */
  readonly lost: number;
}

export const SWEEP_RESULT_SIZE = 48;

const u64 = (b: Buffer, off: number): number => b.readUInt32LE(off) + b.readUInt32LE(off + 4) * 4294967296;

export function decodeSweepResult(b: Buffer): SweepResult {
  if (b.length < SWEEP_RESULT_SIZE) throw new Error(`sweep result of ${b.length} bytes, expected ${SWEEP_RESULT_SIZE}`);
  return {
    packetsTx: u64(b, 0), packetsRx: u64(b, 8), bytesTx: u64(b, 16), bytesRx: u64(b, 24),
    live: b.readUInt32LE(32), expired: b.readUInt32LE(36), reported: b.readUInt32LE(40), lost: b.readUInt32LE(44),
  };
}

/**
 * The keyed sweep's input: final, the count, 1 when the keys are the CPU budget's aggregates
 * (`agg`, 44 bytes as the connection keys), a byte of padding, then up to SWEEP_KEYS_PER_RUN keys.
 */
export function sweepKeysInput(final: boolean, keys: readonly Uint8Array[], agg = false): Uint8Array {
  if (keys.length > SWEEP_KEYS_PER_RUN) throw new Error(`${keys.length} keys for one sweep run, at most ${SWEEP_KEYS_PER_RUN}`);
  const b = new Uint8Array(Math.max(14, SWEEP_KEYS_HDR + keys.length * CT_KEY_SIZE));
  b[0] = final ? 1 : 0;
  b[1] = keys.length;
  b[2] = agg ? 1 : 0;
  keys.forEach((k, i) => b.set(k, SWEEP_KEYS_HDR + i * CT_KEY_SIZE));
  return b;
}

/** Two sweep results added up (the keyed sweep's runs of one sweep). */
export function addSweepResults(a: SweepResult, b: SweepResult): SweepResult {
  return {
    packetsTx: a.packetsTx + b.packetsTx, packetsRx: a.packetsRx + b.packetsRx, bytesTx: a.bytesTx + b.bytesTx, bytesRx: a.bytesRx + b.bytesRx,
    live: a.live + b.live, expired: a.expired + b.expired, reported: a.reported + b.reported, lost: a.lost + b.lost,
  };
}

/**
 * The sweep's input packet: an Ethernet header's worth of bytes, the first 1 for the final sweep, the
 * second 1 to flush only the CPU budget's aggregates (not walk the connections).
 */
export function sweepInput(final: boolean, aggregatesOnly = false): Uint8Array {
  const b = new Uint8Array(14);
  b[0] = final ? 1 : 0;
  b[1] = aggregatesOnly ? 1 : 0;
  return b;
}
