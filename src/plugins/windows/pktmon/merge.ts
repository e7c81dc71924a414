/**
 * One Flow per packet out of PktMon's appearances. PktMon logs a packet once per component it
 * crosses (NIC, filters, vSwitch ports, VFP, TCPIP, …). On the builds that number appearances
 * (AppearanceCount 1..N: Windows 10 19042, Windows Server 2022 20348) every appearance of one packet
 * has the same (PktGroupId, PktNumber). On builds that log AppearanceCount 0 (seen on 26100 and
 * 26200) every appearance has a PktGroupId of its own, and appearances are matched on the packet's
 * bytes instead (the IP header's addresses, protocol, length and ID, and the first 16 bytes of the
 * transport header).
 *
 * A packet is held until it is complete: a drop ends it at once; otherwise no appearance of it came
 * for SETTLE_TICKS of event time (other events did), or it was held over HOLD_DRAINS drains (no
 * newer events at all). Held packets are bounded (capacity): past it the oldest is closed early.
 * An appearance of a packet already closed (`late`) is discarded and counted, so no packet gives two flows.
 *
 * The packet's flow (docs/windows-pktmon.md, "One flow per packet"). "First" and "last" are places
 * in the packet's path: its AppearanceCount where PktMon numbers appearances (ETW may deliver a
 * packet's appearance 3 before its appearance 1), else the order of arrival:
 * - sent by a local endpoint (its first appearance is Out, Tx, or a vSwitch port's Ingress: the
 *   packet entered the switch from a pod's port): the first appearance that shows its IP header,
 *   i.e. the sender's own port/stack, direction EGRESS, observation point FROM_ENDPOINT;
 * - otherwise (received: first seen In/Rx at a NIC, or Egress from the switch): the last appearance
 *   that shows its IP header, i.e. the receiving pod's port or TCPIP, INGRESS, TO_ENDPOINT;
 * - dropped at any appearance: DROPPED once with that appearance's reason (never also FORWARDED),
 *   its fields from the drop appearance when it shows the IP header, else from the one above.
 * `bytes` is the chosen appearance's OriginalPayloadSize; `packets` 1.
 */
import type { Flow } from '../../../flow/index.js';
import { decodeFrameEvent, dirTagDirection, EVENT_FRAME, EVENT_FRAME_DROP, HEADER_SIZE, ipStart } from './decode.js';
import { dropReasonName } from './drop-reasons.js';

/** What the merger reads of one event (the ETW layer's record). */
export interface PktmonRecord {
  readonly id: number;
  readonly timestamp: bigint;
  readonly data: Uint8Array;
}

/** 10 ms of event time (100 ns ticks): real appearances of one packet span microseconds (≤ 0.22 ms in the real captures). */
export const SETTLE_TICKS = 100_000;
export const HOLD_DRAINS = 2;
export const HELD_CAPACITY = 16_384;
/** How many closed packets are remembered to discard their late appearances. */
export const RECENT_CAPACITY = 65_536;
/**
 * How long (event time) after its last appearance an appearance of a closed packet counts as late
 * (ETW delivers each CPU's buffer on its own, up to its flush timer apart): 10 s. Past it the same
 * (PktGroupId, PktNumber) is a new packet (PktMon restarted and numbers from 1 again).
 */
export const LATE_TICKS = 100_000_000;


export interface MergeOptions {
  readonly settleTicks?: number;
  readonly holdDrains?: number;
  readonly capacity?: number;
  readonly recent?: number;
  readonly lateTicks?: number;
}

export interface MergeStats {
  /** Packet events (160/170) taken. */
  appearances: number;
  /** Packets closed, by what closed them. */
  settled: number;
  aged: number;
  evicted: number;
  dropped: number;
  /** Appearances of packets already closed, discarded. */
  late: number;
  /** Closed packets with no appearance that showed an IPv4/IPv6 header (ARP, WiFi-only, …): no flow. */
  nonIp: number;
  /** Records shorter than the header. */
  bad: number;
}

/**
 * An appearance kept to be decoded when its packet closes. Within a push it points into the
 * batch's record; a packet still held when the push ends keeps a copy of its header and the start of
 * its frame (`owned`), so nothing of a drained batch is held past its drain.
 */
interface Kept {
  readonly id: number;
  readonly ts: bigint;
  readonly data: Uint8Array;
  readonly owned: boolean;
}

/** An appearance that showed the IP header, with its place in the packet's path. */
interface Placed {
  readonly n: number;
  readonly k: Kept;
}

interface Held {
  readonly key: string;
  readonly byGroup: boolean;
  /** Matched on its bytes: the places (component, edge, DirTag) it was logged at so far. */
  readonly places: Set<number> | undefined;
  /**
   * The lowest place seen so far: the AppearanceCount where PktMon numbers appearances (1 is where
   * the packet entered, whatever order ETW delivers them in), else the order of arrival.
   */
  first: number;
  /** Sent by a local endpoint (the DirTag of its first place): the flow reads its first IP appearance, else its last. */
  sent: boolean;
  /** Appearances that arrived (the place of the next one when PktMon does not number them). */
  arrived: number;
  low: Placed | undefined;
  high: Placed | undefined;
  drop: Kept | undefined;
  dropReason: number;
  dropped: boolean;
  /** Event time in 100 ns ticks, as a double (a few µs of precision lost at FILETIME's magnitude; no BigInt per event). */
  lastTs: number;
  touched: number;
}

/** What a flow is decoded from: the 34-byte header, up to 18 bytes of link header, 60 of IP header and 14 of TCP header. */
const KEEP_BYTES = HEADER_SIZE + 18 + 60 + 14;

const keep = (e: PktmonRecord): Kept => ({ id: e.id, ts: e.timestamp, data: e.data, owned: false });
const own = (k: Kept | undefined): Kept | undefined => (k && !k.owned ? { id: k.id, ts: k.ts, data: k.data.slice(0, KEEP_BYTES), owned: true } : k);
const ownPlaced = (p: Placed | undefined): Placed | undefined => (p && !p.k.owned ? { n: p.n, k: own(p.k)! } : p);

export class PacketMerger {
  readonly stats: MergeStats = { appearances: 0, settled: 0, aged: 0, evicted: 0, dropped: 0, late: 0, nonIp: 0, bad: 0 };
  readonly #held = new Map<string, Held>();
  readonly #recent = new Map<string, number>();
  #drain = 0;
  #newest = 0;

  readonly #opts: MergeOptions;

  constructor(opts: MergeOptions = {}) {
    this.#opts = opts;
  }

  get held(): number {
    return this.#held.size;
  }

  /** Takes a batch of events; closed packets' flows are appended to `out`. Events other than 160/170 are skipped. */
  push(events: readonly PktmonRecord[], out: Flow[]): void {
    const settle = this.#opts.settleTicks ?? SETTLE_TICKS;
    const capacity = this.#opts.capacity ?? HELD_CAPACITY;
    for (const e of events) {
      if (e.id !== EVENT_FRAME && e.id !== EVENT_FRAME_DROP) continue;
      this.stats.appearances++;
      const v = new DataView(e.data.buffer, e.data.byteOffset, e.data.byteLength);
      if (v.byteLength < HEADER_SIZE) {
        this.stats.bad++;
        continue;
      }
      const dirTag = v.getUint16(12, true);
      const packetType = v.getUint16(14, true);
      const dropReason = v.getUint32(22, true);
      const end = Math.min(v.byteLength, HEADER_SIZE + v.getUint16(32, true));
      const appearance = v.getUint16(10, true);
      const ts = Number(e.timestamp);
      let key: string | undefined;
      if (appearance > 0) key = `g${v.getUint32(4, true)}:${v.getUint32(0, true)}:${v.getUint16(8, true)}`;
      else key = contentKey(v, packetType, end);
      if (key === undefined) continue; // AppearanceCount 0 and no IP header: cannot be matched, and gives no flow anyway
      const byGroup = appearance > 0;
      const closed = this.#recent.get(key);
      if (closed !== undefined && ts - closed <= (byGroup ? (this.#opts.lateTicks ?? LATE_TICKS) : settle)) {
        this.stats.late++;
        continue;
      }
      if (ts > this.#newest) this.#newest = ts;
      let p = this.#held.get(key);
      // Where a forwarded appearance was logged: a packet crosses each edge of each component once a
      // direction (so on the numbered captures). Drops are left out: on 26200 TCPIP logs two drops
      // of the same bytes at one place 1.4 µs apart (INET then NL), whether of one packet or two is unknown.
      const dropping = e.id === EVENT_FRAME_DROP || dropReason !== 0;
      const place = dropping ? -1 : v.getUint16(16, true) * 0x1_0000_0000 + v.getUint16(18, true) * 0x1_0000 + dirTag;
      if (p && !byGroup && (ts - p.lastTs > settle || p.places?.has(place))) {
        // The same bytes again, later or at a place this packet was already logged: another packet (a
        // repeated IPv6 multicast, which carries no ID, comes back within microseconds with every byte the same).
        const again = ts - p.lastTs <= settle;
        this.#close(p, out, p.dropped ? 'dropped' : 'settled');
        if (again) this.#recent.delete(key);
        p = undefined;
      }
      if (!p) {
        if (this.#held.size >= capacity) {
          const oldest = this.#held.values().next().value;
          if (oldest) this.#close(oldest, out, 'evicted');
        }
        p = { key, byGroup, places: byGroup ? undefined : new Set(), first: Infinity, sent: false, arrived: 0, low: undefined, high: undefined, drop: undefined, dropReason: 0, dropped: false, lastTs: ts, touched: this.#drain };
        this.#held.set(key, p);
      }
      if (ts > p.lastTs) p.lastTs = ts;
      if (!dropping) p.places?.add(place);
      p.touched = this.#drain;
      const n = byGroup ? appearance : ++p.arrived;
      if (n < p.first) {
        p.first = n;
        p.sent = dirTagDirection(dirTag) === 'EGRESS';
      }
      const ip = showsIp(v, packetType, end);
      let kept: Kept | undefined;
      if (ip) {
        kept = keep(e);
        if (!p.low || n < p.low.n) p.low = { n, k: kept };
        if (!p.high || n >= p.high.n) p.high = { n, k: kept };
      }
      if (dropping && !p.dropped) {
        p.dropped = true;
        p.dropReason = dropReason;
        if (ip) p.drop = kept;
      }
    }
    // Close what is done: dropped packets, and those with no appearance for `settle` of event time.
    for (const p of this.#held.values()) {
      if (p.dropped) this.#close(p, out, 'dropped');
      else if (this.#newest - p.lastTs > settle) this.#close(p, out, 'settled');
      else {
        p.low = ownPlaced(p.low);
        p.high = ownPlaced(p.high);
      }
    }
  }

  /** Once per drain, after push: closes packets held over `holdDrains` drains (no newer events came to settle them). */
  tick(out: Flow[]): void {
    this.#drain++;
    const hold = this.#opts.holdDrains ?? HOLD_DRAINS;
    for (const p of this.#held.values()) {
      if (this.#drain - p.touched >= hold) this.#close(p, out, p.dropped ? 'dropped' : 'aged');
    }
  }

  /** Closes every held packet (the plugin stops). */
  flush(out: Flow[]): void {
    for (const p of this.#held.values()) this.#close(p, out, p.dropped ? 'dropped' : 'aged');
  }

  #close(p: Held, out: Flow[], why: 'settled' | 'aged' | 'evicted' | 'dropped'): void {
    this.stats[why]++;
    this.#held.delete(p.key);
    this.#recent.set(p.key, p.lastTs);
    if (this.#recent.size > (this.#opts.recent ?? RECENT_CAPACITY)) {
      const oldest = this.#recent.keys().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
    const sent = p.sent;
    const k = (p.dropped ? p.drop : undefined) ?? (sent ? p.low : p.high)?.k;
    const f = k && decodeFrameEvent(k.id, k.ts, k.data);
    if (!f) {
      this.stats.nonIp++;
      return;
    }
    f.direction = sent ? 'EGRESS' : 'INGRESS';
    f.observationPoint = sent ? 'FROM_ENDPOINT' : 'TO_ENDPOINT';
    if (p.dropped) {
      f.verdict = 'DROPPED';
      f.dropReason = dropReasonName(p.dropReason);
    } else {
      f.verdict = 'FORWARDED';
      f.dropReason = '';
    }
    out.push(f);
  }
}

/** Whether the logged frame holds a whole IPv4/IPv6 header (what decodeFrameEvent needs for a flow). */
function showsIp(v: DataView, packetType: number, end: number): boolean {
  const o = ipStart(v, packetType, end);
  if (o < 0) return false;
  const version = v.getUint8(o) >> 4;
  return (version === 4 && o + 20 <= end) || (version === 6 && o + 40 <= end);
}

/**
 * The bytes that name one packet across its appearances when PktMon does not number them: IP
 * version, addresses, protocol and total length (+ ID for IPv4), and the first 16 bytes of the
 * transport header (ports, TCP sequence and acknowledgement numbers). TTL and checksums are left
 * out (routing changes them). Undefined when the frame shows no IP header.
 */
function contentKey(v: DataView, packetType: number, end: number): string | undefined {
  const o = ipStart(v, packetType, end);
  if (o < 0) return undefined;
  const version = v.getUint8(o) >> 4;
  let parts: number[];
  let l4: number;
  if (version === 4 && o + 20 <= end) {
    parts = [4, v.getUint32(o, false) & 0xffff, v.getUint16(o + 4, false), v.getUint8(o + 9), v.getUint32(o + 12, false), v.getUint32(o + 16, false)];
    l4 = o + (v.getUint8(o) & 0x0f) * 4;
  } else if (version === 6 && o + 40 <= end) {
    parts = [6, v.getUint16(o + 4, false), v.getUint8(o + 6)];
    for (let i = 8; i < 40; i += 4) parts.push(v.getUint32(o + i, false));
    l4 = o + 40;
  } else {
    return undefined;
  }
  for (let i = 0; i < 16 && l4 + i + 4 <= end; i += 4) parts.push(v.getUint32(l4 + i, false));
  return `c${parts.join(':')}`;
}
