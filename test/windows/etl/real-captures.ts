/**
 * The real PktMon captures (test/fixtures/windows/real/SOURCES.md) as the pktmon tests use them: their packet
 * events, the plugin's merger fed them in drains, and where the 19042 capture's TCPIP saw each packet.
 */
import { readFileSync } from 'node:fs';
import type { Flow } from '../../../src/flow/index.js';
import { decodeFrameEvent } from '../../../src/plugins/windows/pktmon/decode.js';
import { PacketMerger } from '../../../src/plugins/windows/pktmon/merge.js';
import { readEtl, type EtlEvent } from './etl.js';

export const REAL = new URL('../../../../test/fixtures/windows/real/', import.meta.url);
export const PKTMON = '4d4f80d9-c8bd-4d73-bb5b-19c90402c5ac';

/** The capture's packet events (PktMon's 160 and 170). */
export function packetEvents(file: string): EtlEvent[] {
  return readEtl(readFileSync(new URL(file, REAL))).events.filter((e) => e.provider === PKTMON && (e.id === 160 || e.id === 170));
}

/** The plugin's merger fed `events` in drains of `drain`, ticked after each, flushed at the end. */
export function mergeEvents(events: readonly EtlEvent[], drain = 500): { flows: Flow[]; merger: PacketMerger } {
  const merger = new PacketMerger();
  const flows: Flow[] = [];
  for (let i = 0; i < events.length; i += drain) {
    merger.push(events.slice(i, i + drain), flows);
    merger.tick(flows);
  }
  merger.flush(flows);
  return { flows, merger };
}

/**
 * Each packet's direction at the endpoint's own stack, TCPIP (components 79 and 78 of the 19042 capture's own
 * component list), by its time: Tx EGRESS, Rx INGRESS.
 */
export function tcpipDirections(events: readonly EtlEvent[]): Map<number, string> {
  const atTcpip = new Map<number, string>();
  for (const e of events) {
    const d = Buffer.from(e.data);
    if (d.readUInt16LE(16) !== 79 && d.readUInt16LE(16) !== 78) continue;
    const f = decodeFrameEvent(e.id, e.timestamp, e.data);
    if (f) atTcpip.set(f.timeMs, d.readUInt16LE(12) === 4 ? 'EGRESS' : 'INGRESS');
  }
  return atTcpip;
}
