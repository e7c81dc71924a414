/**
 * The byte-matching path (builds that log AppearanceCount 0, e.g. Windows Server 2025 26100) measured
 * against number matching on every real capture from a build that numbers appearances
 * (test/fixtures/windows/real/SOURCES.md): each capture is fed to the merger twice, as it was
 * logged (PktMon's (PktGroupId, PktNumber) join the appearances: the oracle) and with every
 * AppearanceCount set to 0 and every PktGroupId made its own, as 26100 logs them (the merger joins
 * them on the packet's bytes). docs/windows-pktmon.md keeps the figures.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Flow } from '../../../src/flow/index.js';
import { decodeFrameEvent } from '../../../src/plugins/windows/pktmon/decode.js';
import type { EtlEvent } from './etl.js';
import { mergeEvents, packetEvents } from './real-captures.js';

const merge = (events: readonly EtlEvent[]): Flow[] => mergeEvents(events).flows;

/** The events as a build that does not number appearances logs them: AppearanceCount 0, a PktGroupId per appearance. */
function unnumbered(events: readonly EtlEvent[]): EtlEvent[] {
  return events.map((e, i) => {
    const d = Buffer.from(e.data);
    d.writeUInt16LE(0, 10);
    d.writeBigUInt64LE(0x7000_0000_0000_0000n + BigInt(i), 0);
    return { ...e, data: d };
  });
}

const sig = (f: Flow): string => `${f.timeMs} ${f.srcIp}:${f.srcPort}>${f.dstIp}:${f.dstPort}/${f.proto} ${f.bytes}`;

export interface Agreement {
  /** IP packets (the oracle's flows). */
  readonly packets: number;
  /** Packets whose byte-matched flow is the oracle's: one flow, the same appearance read, the same direction and verdict. */
  readonly agree: number;
  /** Packets that gave more than one flow (their appearances split). */
  readonly split: number;
  /** Packets that gave no flow of their own (their appearances joined to another packet's). */
  readonly joined: number;
  /** Packets that gave one flow, but read at another appearance or with another direction. */
  readonly other: number;
}

/** Each flow names the appearance it read (its time and what it shows); that appearance names its packet. */
export function agreement(events: readonly EtlEvent[]): Agreement {
  const packetOf = new Map<string, Set<string>>();
  for (const e of events) {
    const f = decodeFrameEvent(e.id, e.timestamp, e.data);
    if (!f) continue;
    const d = Buffer.from(e.data);
    const s = packetOf.get(sig(f)) ?? new Set<string>();
    packetOf.set(sig(f), s.add(`${d.readBigUInt64LE(0)}/${d.readUInt16LE(8)}`));
  }
  const packet = (f: Flow): string => {
    const s = packetOf.get(sig(f));
    assert.ok(s && s.size === 1, `flow ${sig(f)} names ${s?.size ?? 0} packets`);
    return [...s][0]!;
  };
  const oracle = new Map(merge(events).map((f) => [packet(f), f]));
  const byBytes = new Map<string, Flow[]>();
  for (const f of merge(unnumbered(events))) byBytes.set(packet(f), [...(byBytes.get(packet(f)) ?? []), f]);
  let agree = 0, split = 0, joined = 0, other = 0;
  for (const [k, o] of oracle) {
    const b = byBytes.get(k) ?? [];
    if (b.length === 0) joined++;
    else if (b.length > 1) split++;
    else if (sig(b[0]!) === sig(o) && b[0]!.direction === o.direction && b[0]!.verdict === o.verdict) agree++;
    else other++;
  }
  return { packets: oracle.size, agree, split, joined, other };
}

describe('byte matching against number matching, on every real capture from a build that numbers appearances', () => {
  for (const [file, packets] of [['pktmon-19042-wifi.etl', 337], ['pktmon-19042-wifi-2.etl', 89], ['pktmon-20348-server2022.etl', 38]] as const) {
    it(`${file}: byte matching gives every one of its ${packets} IP packets the flow number matching gives it`, () => {
      const events = packetEvents(file);
      const a = agreement(events);
      console.log(JSON.stringify({ capture: file, ...a }));
      assert.deepEqual(a, { packets, agree: packets, split: 0, joined: 0, other: 0 });
    });
  }
});
