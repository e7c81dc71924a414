/**
 * A triggered capture's pre-trigger ring (src/capture/ring.ts): packets per second fed through it
 * while armed (each record copied into the ring, the oldest let go), in tcpdump's 64 KiB pipe chunks,
 * against a bare walk of the same records (headers read, nothing kept) for the ratio, alternated ABBA
 * in one run; the heap's growth over the armed runs says whether the ring allocates per packet.
 * Synthetic `-i any` (Linux cooked v2) UDP/IPv4 packets of BENCH_RING_PAYLOAD bytes (200).
 * Env: BENCH_RING_PACKETS (2000000 per run). One JSON line.
 */
import { cpus, release } from 'node:os';
import { TriggeredPcap } from '../../src/capture/index.js';

const PACKETS = Number(process.env['BENCH_RING_PACKETS'] ?? 2_000_000);
const PAYLOAD = Number(process.env['BENCH_RING_PAYLOAD'] ?? 200);
const CHUNK = 65_536;
const T0 = 1_700_000_000_000;

/** The stream as chunks: a pcap header, then PACKETS records 10 µs apart. */
function stream(): Buffer[] {
  const size = 16 + 20 + 28 + PAYLOAD;
  const all = Buffer.alloc(24 + PACKETS * size);
  all.writeUInt32LE(0xa1b2c3d4, 0);
  all.writeUInt16LE(2, 4);
  all.writeUInt16LE(4, 6);
  all.writeUInt32LE(262144, 16);
  all.writeUInt32LE(276, 20);
  for (let i = 0; i < PACKETS; i++) {
    const p = 24 + i * size;
    const us = i * 10;
    all.writeUInt32LE(T0 / 1000 + Math.floor(us / 1e6), p);
    all.writeUInt32LE(us % 1e6, p + 4);
    all.writeUInt32LE(size - 16, p + 8);
    all.writeUInt32LE(size - 16, p + 12);
    all.writeUInt16BE(0x0800, p + 16);
    all[p + 36] = 0x45;
    all[p + 45] = 17;
    all.writeUInt16BE(7000, p + 36 + 22);
  }
  const chunks: Buffer[] = [];
  for (let o = 0; o < all.length; o += CHUNK) chunks.push(all.subarray(o, o + CHUNK));
  return chunks;
}

/** The same records walked with nothing kept (the parsing floor). */
function bare(chunks: readonly Buffer[]): number {
  let carry: Buffer | undefined;
  let n = 0;
  let sum = 0;
  let header = false;
  for (const c of chunks) {
    const b = carry ? Buffer.concat([carry, c]) : c;
    let pos = header ? 0 : 24;
    header = true;
    while (b.length - pos >= 16) {
      const incl = b.readUInt32LE(pos + 8);
      if (b.length - pos < 16 + incl) break;
      sum += b.readUInt32LE(pos) + b.readUInt32LE(pos + 4);
      n++;
      pos += 16 + incl;
    }
    carry = pos < b.length ? b.subarray(pos) : undefined;
  }
  return n + (sum === -1 ? 1 : 0);
}

function armed(chunks: readonly Buffer[]): number {
  const r = new TriggeredPcap({ packets: 1000, durationMs: undefined, maxBytes: 64 << 20, slackMs: 5000 }, () => undefined);
  for (const c of chunks) r.feed(c);
  return r.counts.seen;
}

const chunks = stream();
const rates: Record<'armed' | 'bare', number[]> = { armed: [], bare: [] };
const heap: number[] = [];
for (const kind of ['armed', 'bare', 'bare', 'armed', 'armed', 'bare'] as const) {
  global.gc?.();
  const h0 = process.memoryUsage().heapUsed;
  const t0 = process.hrtime.bigint();
  const n = kind === 'armed' ? armed(chunks) : bare(chunks);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (n !== PACKETS) throw new Error(`${kind}: ${n} packets of ${PACKETS}`);
  rates[kind].push(n / s);
  if (kind === 'armed') heap.push(process.memoryUsage().heapUsed - h0);
}
const mean = (xs: number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;
console.log(JSON.stringify({
  name: 'capture/ring',
  fixture: `${PACKETS} UDP/IPv4 packets of ${PAYLOAD} bytes (Linux cooked v2), ${CHUNK}-byte chunks, ring of 64 MiB keeping 1000 packets + 5 s`,
  conditions: { kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
  armedPacketsPerSecond: Math.round(mean(rates.armed)),
  barePacketsPerSecond: Math.round(mean(rates.bare)),
  armedToBare: Number((mean(rates.armed) / mean(rates.bare)).toFixed(3)),
  nsPerArmedPacket: Number((1e9 / mean(rates.armed)).toFixed(1)),
  heapGrowthPerArmedRunBytes: Math.round(mean(heap)),
}));
