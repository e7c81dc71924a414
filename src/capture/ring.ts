/**
 * A triggered capture's packets: a classic pcap byte stream (tcpdump `-w -`, or a file read back)
 * parsed record by record into a pre-trigger ring, until the trigger comes; then the trigger's packet
 * is found in the ring (the packet of the flow's 5-tuple nearest the flow's time), the pre-trigger
 * window before it is written with it, and every later packet is written as it comes.
 *
 * The ring is one buffer of `maxBytes` allocated up front (records copied in, the oldest overwritten)
 * with typed-array indexes: no allocation per packet. It keeps the last `packets` packets (or the
 * last `durationMs`) before any moment up to `slackMs` back, since the trigger reaches the workload
 * a little after its packet was captured (the flow's way through the agent and Hubble).
 */
import { packetMatches, type PacketTuple } from './pcap-header.js';

export const PCAP_HEADER_BYTES = 24;
export const RECORD_HEADER_BYTES = 16;
/** No capture tool writes a bigger record (tcpdump's largest snapshot length is 262144). */
const MAX_RECORD_BYTES = 262_144 + RECORD_HEADER_BYTES;
/** How far from the flow's time the trigger's packet is looked for. */
export const MATCH_WINDOW_MS = 1000;

export interface RingOptions {
  /** Keep this many packets before the trigger's packet (or durationMs). */
  readonly packets: number | undefined;
  readonly durationMs: number | undefined;
  /** The ring's buffer (the oldest packets go first when it is full). */
  readonly maxBytes: number;
  /** How late the trigger may come after its packet and still find the window before it intact. */
  readonly slackMs: number;
}

export interface TriggerPoint {
  /** The flow's time, ms since the epoch. */
  readonly timeMs: number;
  readonly tuple: PacketTuple | undefined;
}

/** What the written pcap holds around the trigger (the manifest's `trigger`). */
export interface TriggerCut {
  /** Packets written before the trigger's packet. */
  readonly preTriggerPackets: number;
  /** The trigger's packet: its index in the written file (0-based) and its capture time; -1/undefined when it never came. */
  readonly triggerPacketIndex: number;
  readonly triggerPacketTimeMs: number | undefined;
  /** How it was found: the flow's 5-tuple, only its time, or not at all (no packet within the window). */
  readonly matchedBy: 'tuple' | 'time' | 'none';
}

export class PcapStreamError extends Error {
  override readonly name = 'PcapStreamError';
}

/** Pre-trigger ring, then pass-through: feed() the stream's chunks; `write` receives the pcap to keep. */
export class TriggeredPcap {
  readonly #o: RingOptions;
  readonly #write: (b: Uint8Array) => void;
  #header: Buffer | undefined;
  #le = true;
  #nanos = false;
  #linkType = 0;
  #carry: Buffer | undefined;
  // the ring: records [#head, #tail) by sequence number; slot = seq % #cap
  readonly #buf: Buffer;
  #cap = 1024;
  #off = new Int32Array(this.#cap);
  #len = new Int32Array(this.#cap);
  #ts = new Float64Array(this.#cap);
  #head = 0;
  #tail = 0;
  /** First record no older than the newest minus slackMs. */
  #recent = 0;
  #w = 0;
  #trigger: TriggerPoint | undefined;
  #cut: TriggerCut | undefined;
  #written = 0;
  #seen = 0;
  #evicted = 0;
  #tooBig = 0;

  constructor(o: RingOptions, write: (b: Uint8Array) => void) {
    this.#o = o;
    this.#write = write;
    this.#buf = Buffer.allocUnsafe(Math.max(o.maxBytes, MAX_RECORD_BYTES));
  }

  get linkType(): number { return this.#linkType; }
  /** Packets seen in the stream, kept in the ring now, lost from it (overwritten or too big), and written. */
  get counts(): { seen: number; inRing: number; evicted: number; written: number } {
    return { seen: this.#seen, inRing: this.#tail - this.#head, evicted: this.#evicted + this.#tooBig, written: this.#written };
  }
  get cut(): TriggerCut | undefined { return this.#cut; }
  get triggered(): boolean { return this.#trigger !== undefined; }

  /** One chunk of the pcap stream. Throws PcapStreamError when it is not one. */
  feed(chunk: Buffer): void {
    let b = this.#carry ? Buffer.concat([this.#carry, chunk]) : chunk;
    this.#carry = undefined;
    let pos = 0;
    if (!this.#header) {
      if (b.length < PCAP_HEADER_BYTES) {
        this.#carry = b;
        return;
      }
      this.#readHeader(b.subarray(0, PCAP_HEADER_BYTES));
      pos = PCAP_HEADER_BYTES;
    }
    while (b.length - pos >= RECORD_HEADER_BYTES) {
      const incl = this.#le ? b.readUInt32LE(pos + 8) : b.readUInt32BE(pos + 8);
      if (incl > MAX_RECORD_BYTES) throw new PcapStreamError(`a pcap record of ${incl} bytes: not a pcap stream`);
      const size = RECORD_HEADER_BYTES + incl;
      if (b.length - pos < size) break;
      const sec = this.#le ? b.readUInt32LE(pos) : b.readUInt32BE(pos);
      const frac = this.#le ? b.readUInt32LE(pos + 4) : b.readUInt32BE(pos + 4);
      this.#record(b, pos, size, sec * 1000 + (this.#nanos ? frac / 1e6 : frac / 1e3));
      pos += size;
    }
    if (pos < b.length) {
      b = b.subarray(pos);
      this.#carry = b;
    }
  }

  /** The trigger came: its packet is looked for once packets past its window arrive, or at finish(). */
  trigger(t: TriggerPoint): void {
    if (this.#trigger) return;
    this.#trigger = t;
    if (this.#tail > this.#head && this.#ts[(this.#tail - 1) % this.#cap]! > t.timeMs + MATCH_WINDOW_MS) this.#decide();
  }

  /** The stream ended (or the post-trigger window did): decides the cut if it is still open. */
  finish(): void {
    if (this.#trigger && !this.#cut) this.#decide();
  }

  #readHeader(h: Buffer): void {
    const magic = h.readUInt32LE(0);
    if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) this.#le = true;
    else if (magic === 0xd4c3b2a1 || magic === 0x4d3cb2a1) this.#le = false;
    else throw new PcapStreamError(`not a classic pcap stream (magic 0x${magic.toString(16)})`);
    this.#nanos = magic === 0xa1b23c4d || magic === 0x4d3cb2a1;
    this.#linkType = (this.#le ? h.readUInt32LE(20) : h.readUInt32BE(20)) & 0x0fffffff;
    this.#header = Buffer.from(h);
  }

  #record(b: Buffer, pos: number, size: number, tsMs: number): void {
    this.#seen++;
    if (this.#cut) {
      this.#write(b.subarray(pos, pos + size));
      this.#written++;
      return;
    }
    if (size > this.#buf.length) {
      this.#tooBig++;
      return;
    }
    const at = this.#place(size);
    b.copy(this.#buf, at, pos, pos + size);
    if (this.#tail - this.#head === this.#cap) this.#grow();
    const slot = this.#tail % this.#cap;
    this.#off[slot] = at;
    this.#len[slot] = size;
    this.#ts[slot] = tsMs;
    this.#tail++;
    this.#w = at + size;
    this.#retain(tsMs);
    if (this.#trigger && tsMs > this.#trigger.timeMs + MATCH_WINDOW_MS) this.#decide();
  }

  /** Where a record of `size` bytes goes; evicts the oldest records in its way. */
  #place(size: number): number {
    for (;;) {
      if (this.#head === this.#tail) {
        this.#w = 0;
        return 0;
      }
      const h = this.#off[this.#head % this.#cap]!;
      if (this.#w > h) {
        if (this.#w + size <= this.#buf.length) return this.#w;
        if (size <= h) return 0;
      } else if (this.#w + size <= h) return this.#w;
      this.#evictOne();
    }
  }

  #evictOne(): void {
    this.#head++;
    this.#evicted++;
    if (this.#recent < this.#head) this.#recent = this.#head;
  }

  #grow(): void {
    const cap = this.#cap * 2;
    const off = new Int32Array(cap), len = new Int32Array(cap), ts = new Float64Array(cap);
    for (let s = this.#head; s < this.#tail; s++) {
      off[s % cap] = this.#off[s % this.#cap]!;
      len[s % cap] = this.#len[s % this.#cap]!;
      ts[s % cap] = this.#ts[s % this.#cap]!;
    }
    this.#off = off;
    this.#len = len;
    this.#ts = ts;
    this.#cap = cap;
  }

  /** Drops what no trigger arriving within slackMs could still want. */
  #retain(newest: number): void {
    const { packets, durationMs, slackMs } = this.#o;
    const horizon = newest - slackMs;
    while (this.#recent < this.#tail && this.#ts[this.#recent % this.#cap]! < horizon) this.#recent++;
    if (this.#trigger) return; // deciding: keep everything around the trigger
    if (packets !== undefined) {
      while (this.#recent - this.#head > packets) this.#evictOne();
    } else {
      const oldest = horizon - (durationMs ?? 0);
      while (this.#head < this.#recent && this.#ts[this.#head % this.#cap]! < oldest) this.#evictOne();
    }
  }

  #decide(): void {
    const t = this.#trigger as TriggerPoint;
    const ts = (s: number): number => this.#ts[s % this.#cap]!;
    const data = (s: number): Buffer => {
      const o = this.#off[s % this.#cap]!;
      return this.#buf.subarray(o + RECORD_HEADER_BYTES, o + this.#len[s % this.#cap]!);
    };
    let cut = -1;
    let matchedBy: TriggerCut['matchedBy'] = 'none';
    if (t.tuple) {
      let best = Infinity;
      for (let s = this.#head; s < this.#tail; s++) {
        const d = Math.abs(ts(s) - t.timeMs);
        if (d <= MATCH_WINDOW_MS && d < best && packetMatches(this.#linkType, data(s), t.tuple)) {
          best = d;
          cut = s;
        }
      }
      if (cut >= 0) matchedBy = 'tuple';
    }
    if (cut < 0) {
      for (let s = this.#head; s < this.#tail; s++) {
        if (ts(s) >= t.timeMs && ts(s) - t.timeMs <= MATCH_WINDOW_MS) {
          cut = s;
          matchedBy = 'time';
          break;
        }
      }
    }
    const at = cut < 0 ? this.#tail : cut;
    const cutTs = cut < 0 ? t.timeMs : ts(cut);
    let start = at;
    const { packets, durationMs } = this.#o;
    if (packets !== undefined) start = Math.max(this.#head, at - packets);
    else while (start > this.#head && ts(start - 1) >= cutTs - (durationMs ?? 0)) start--;
    this.#cut = { preTriggerPackets: at - start, triggerPacketIndex: cut < 0 ? -1 : at - start, triggerPacketTimeMs: cut < 0 ? undefined : cutTs, matchedBy };
    this.#write(this.#header ?? Buffer.alloc(0));
    // The ring is not written to any more: its records go out as views, one write each.
    for (let s = start; s < this.#tail; s++) {
      const o = this.#off[s % this.#cap]!;
      this.#write(this.#buf.subarray(o, o + this.#len[s % this.#cap]!));
      this.#written++;
    }
    this.#head = this.#tail;
  }
}
