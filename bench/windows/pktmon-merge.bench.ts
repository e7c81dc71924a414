/**
 * PktMon decoding, side by side in one run on one core: the per-appearance decode (one Flow per
 * PktMon event, as the plugin did before it merged) and the per-packet merger
 * (src/plugins/windows/pktmon/merge.ts: decode, merge by (PktGroupId, PktNumber), close, one Flow per
 * packet), over the events of the real Windows 10 19042 capture (test/fixtures/windows/real,
 * 3 646 packet events of 345 packets), replayed in drains of 16 384 events with the PktGroupIds
 * moved on every lap so each lap is new packets. Prints one JSON line: events/s and flows/s of each,
 * and heap bytes allocated per event. Run with `node --expose-gc` (make bench does) for the
 * allocation figure. BENCH_ROUNDS, BENCH_ROUND_MS tune the run.
 *
 * Figures, median of 7 rounds, three runs on 2026-11-26 (2 vCPU VM shared with 7 other builds, load
 * average ~26, Node 22.23.3): per appearance 638–645 k events/s (11 976 flows a lap, 126 heap bytes
 * an event); per packet 288–339 k events/s (2 696 flows a lap: one per IP packet, 452 bytes an event).
 * Merging costs about 2x the bare decode per event and gives 4.4x fewer flows to enrich and count.
 * A first version that decoded every appearance ran 215 k/s. Keeping the chosen appearance's bytes
 * and decoding once per packet, with Number timestamps (no BigInt per event), doubled that.
 */
import { readFileSync } from 'node:fs';
import type { Flow } from '../../src/flow/index.js';
import { decodeFrameEvent } from '../../src/plugins/windows/pktmon/decode.js';
import { PacketMerger, type PktmonRecord } from '../../src/plugins/windows/pktmon/merge.js';
import { readEtl } from '../../test/windows/etl/etl.js';

const envNum = (k: string, d: number): number => (process.env[k] ? Number(process.env[k]) : d);
const ROUNDS = envNum('BENCH_ROUNDS', 5);
const ROUND_MS = envNum('BENCH_ROUND_MS', 400);
const DRAIN = 16_384;

const base = readEtl(readFileSync(new URL('../../../test/fixtures/windows/real/pktmon-19042-wifi.etl', import.meta.url))).events
  .filter((e) => e.id === 160 || e.id === 170);
/** 8 laps of the capture, each lap's PktGroupIds and timestamps moved on: 29 168 events of 2 760 packets. */
const events: PktmonRecord[] = [];
for (let lap = 0; lap < 8; lap++) {
  for (const e of base) {
    const data = Buffer.from(e.data);
    data.writeBigUInt64LE(data.readBigUInt64LE(0) + BigInt(lap) * 0x1_0000_0000n, 0);
    events.push({ id: e.id, timestamp: e.timestamp + BigInt(lap) * 200_000_000n, data });
  }
}

function perAppearance(): number {
  let flows = 0;
  for (const e of events) if (decodeFrameEvent(e.id, e.timestamp, e.data)) flows++;
  return flows;
}

function perPacket(): number {
  const m = new PacketMerger();
  const out: Flow[] = [];
  for (let i = 0; i < events.length; i += DRAIN) {
    m.push(events.slice(i, i + DRAIN), out);
    m.tick(out);
  }
  m.flush(out);
  return out.length;
}

function measure(f: () => number): { eventsPerSecond: number; flowsPerLap: number; heapBytesPerEvent: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  const rates: number[] = [];
  let flows = 0;
  let heap = Number.NaN;
  for (let r = 0; r < ROUNDS; r++) {
    gc?.();
    const before = process.memoryUsage().heapUsed;
    flows = f();
    if (gc) heap = (process.memoryUsage().heapUsed - before) / events.length;
    const start = performance.now();
    let n = 0;
    while (performance.now() - start < ROUND_MS) {
      f();
      n += events.length;
    }
    rates.push(n / ((performance.now() - start) / 1000));
  }
  rates.sort((a, b) => a - b);
  return { eventsPerSecond: Math.round(rates[Math.floor(rates.length / 2)]!), flowsPerLap: flows, heapBytesPerEvent: Math.round(heap) };
}

const a = measure(perAppearance);
const b = measure(perPacket);
console.log(JSON.stringify({
  bench: 'pktmon-merge', events: events.length, packets: base.length ? 345 * 8 : 0,
  perAppearance: a, perPacket: b, costRatio: Number((a.eventsPerSecond / b.eventsPerSecond).toFixed(2)),
}));
