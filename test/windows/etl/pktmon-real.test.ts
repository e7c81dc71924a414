/**
 * One Flow per packet, on real PktMon captures (test/fixtures/windows/real/SOURCES.md): the plugin's
 * merger (src/plugins/windows/pktmon/merge.ts) fed the captures' events in drains of 500, against an
 * independent count of the packets (their (PktGroupId, PktNumber) where the build numbers appearances).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Flow } from '../../../src/flow/index.js';
import { decodeFrameEvent } from '../../../src/plugins/windows/pktmon/decode.js';
import type { EtlEvent } from './etl.js';
import { mergeEvents, packetEvents, tcpipDirections } from './real-captures.js';

const merge = mergeEvents;

/** The packets of a capture whose build numbers appearances, each with the flows its appearances decode to (one per appearance that shows an IP header). */
function packetsByGroup(events: readonly EtlEvent[]): Map<string, Flow[]> {
  const by = new Map<string, Flow[]>();
  for (const e of events) {
    const d = Buffer.from(e.data);
    assert.ok(d.readUInt16LE(10) > 0, 'this build numbers appearances');
    const key = `${d.readBigUInt64LE(0)}/${d.readUInt16LE(8)}`;
    const list = by.get(key) ?? [];
    by.set(key, list);
    const f = decodeFrameEvent(e.id, e.timestamp, e.data);
    if (f) list.push(f);
  }
  return by;
}

const sig = (f: Flow): string => `${f.srcIp}:${f.srcPort}>${f.dstIp}:${f.dstPort}/${f.proto} ${f.bytes}`;

for (const [file, name, packets, ipPackets] of [
  ['pktmon-19042-wifi.etl', 'Windows 10 19042', 345, 337],
  ['pktmon-19042-wifi-2.etl', 'Windows 10 19042 (second capture)', 108, 89],
  ['pktmon-20348-server2022.etl', 'Windows Server 2022 (20348)', 38, 38],
] as const) {
  describe(`one flow per packet on a real capture: ${name}`, () => {
    const events = packetEvents(file);
    const byGroup = packetsByGroup(events);

    it(`${byGroup.size} packets, ${ipPackets} of them IP, give exactly one flow each (the appearances decoded one by one gave more)`, () => {
      assert.equal(byGroup.size, packets);
      const perAppearance = [...byGroup.values()].reduce((n, l) => n + l.length, 0);
      assert.ok(perAppearance > ipPackets * 2.5, `one flow per appearance would give ${perAppearance}`);
      const { flows, merger } = merge(events);
      assert.equal(flows.length, ipPackets);
      assert.equal(merger.stats.nonIp, packets - ipPackets, 'the others show no IP header at any appearance (WiFi-only, ARP)');
      assert.equal(merger.stats.late + merger.stats.evicted, 0);
      assert.equal(merger.held, 0);
      // Each flow is one of its packet's appearances: its addresses, ports and bytes (the OriginalSize logged there).
      const expected = new Map<string, number>();
      for (const l of byGroup.values()) for (const s of new Set(l.map(sig))) expected.set(s, (expected.get(s) ?? 0) + 1);
      for (const f of flows) assert.ok(expected.has(sig(f)), `flow ${sig(f)} is none of the packets' appearances`);
      assert.ok(flows.every((f) => f.packets === 1 && f.verdict === 'FORWARDED'));
    });

    it('bytes: each flow carries the original size of its packet, so the bytes add up to the packets\' sizes', () => {
      const { flows } = merge(events);
      // Every IP appearance of one packet logs the same OriginalSize in these captures (WiFi appearances differ, and show no IP header).
      let total = 0;
      for (const l of byGroup.values()) {
        if (!l.length) continue;
        assert.equal(new Set(l.map((f) => f.bytes)).size, 1, 'one size per packet');
        total += l[0]!.bytes;
      }
      assert.equal(flows.reduce((n, f) => n + f.bytes, 0), total);
    });

    it('the result does not depend on where the drains cut the capture (a packet straddling two drains is still one flow)', () => {
      const sorted = (fl: Flow[]): string[] => fl.map((f) => `${f.timeMs} ${sig(f)} ${f.direction}`).sort();
      const whole = sorted(merge(events, events.length).flows);
      for (const n of [5, 7, 64, 333]) assert.deepEqual(sorted(merge(events, n).flows), whole, `drains of ${n}`);
    });
  });
}

it('19042: every flow is read at the endpoint\'s own stack, TCPIP (components 79 and 78): the first appearance of a sent packet, the last of a received one', () => {
  // The capture's own component list (pktmon etl2txt of it, not kept): "Component 79, Type Protocol , Name tcpip.sys, TCPIP",
  // "Component 78, Type Protocol , Name tcpip.sys, TCPIP6"; 11 the WiFi miniport, 31-34 NDIS filters, 72/75/77 other
  // protocols (ndisuio, lltdio, vmnetbridge), which multicast packets also reach.
  const events = packetEvents('pktmon-19042-wifi.etl');
  const atTcpip = tcpipDirections(events);
  const { flows } = merge(events);
  const read = flows.filter((f) => atTcpip.has(f.timeMs));
  assert.equal(read.length, flows.length, `${read.length} of ${flows.length} flows read at TCPIP`);
  for (const f of read) assert.equal(f.direction, atTcpip.get(f.timeMs), 'Tx at TCPIP is EGRESS, Rx INGRESS');
  assert.ok(read.some((f) => f.direction === 'EGRESS') && read.some((f) => f.direction === 'INGRESS'));
});

/**
 * The capture's events as ETW may deliver them: each CPU's buffers on their own, so a packet's later
 * appearances can come before its first. Here every drain of `drain` events comes newest first.
 */
function newestFirst(events: readonly EtlEvent[], drain = 500): EtlEvent[] {
  const out: EtlEvent[] = [];
  for (let i = 0; i < events.length; i += drain) out.push(...events.slice(i, i + drain).reverse());
  return out;
}

describe('numbered appearances: appearance 1 says where the packet entered, whatever order ETW delivers them in', () => {
  const flowsOf = (fl: Flow[]): string[] => fl.map((f) => `${f.timeMs} ${sig(f)} ${f.direction} ${f.observationPoint}`).sort();
  for (const file of ['pktmon-19042-wifi.etl', 'pktmon-19042-wifi-2.etl', 'pktmon-20348-server2022.etl']) {
    it(`${file}: the same flows (appearance read, direction) delivered newest first as in order`, () => {
      const events = packetEvents(file);
      assert.deepEqual(flowsOf(merge(newestFirst(events)).flows), flowsOf(merge(events).flows));
    });
  }

  it('19042 delivered newest first: every flow is still read at TCPIP, Tx EGRESS and Rx INGRESS', () => {
    const events = packetEvents('pktmon-19042-wifi.etl');
    const atTcpip = tcpipDirections(events);
    const { flows } = merge(newestFirst(events));
    assert.equal(flows.filter((f) => atTcpip.get(f.timeMs) === f.direction).length, flows.length);
  });
});

it('the two 19042 captures issue 25 counted: 4 757 events of 426 IP packets gave 2 001 flows one per appearance, and give 426 now', () => {
  const events = [...packetEvents('pktmon-19042-wifi.etl'), ...packetEvents('pktmon-19042-wifi-2.etl')];
  assert.equal(events.length, 4757);
  assert.equal(events.filter((e) => decodeFrameEvent(e.id, e.timestamp, e.data)).length, 2001);
  assert.equal(merge(events).flows.length, 426);
});

describe('one flow per packet on a real capture: Windows 11 26200 (AppearanceCount 0), drops of bare IP packets', () => {
  const events = packetEvents('pktmon-26200-drops.etl');

  it('PacketType 3 decodes as raw IP; each dropped packet is DROPPED once, never also FORWARDED', () => {
    const dropRecords = events.filter((e) => e.id === 170);
    const raw = dropRecords.map((e) => decodeFrameEvent(e.id, e.timestamp, e.data)).filter((f): f is Flow => !!f);
    assert.ok(raw.length >= 20, `raw IP drops decoded: ${raw.length}`);
    assert.ok(raw.some((f) => f.srcIp === '127.0.0.1' && f.dstIp === '127.0.0.1' && f.proto === 6 && f.dropReason === 'Drop_INET_EndpointNotFound'));
    const { flows, merger } = merge(events);
    const dropped = flows.filter((f) => f.verdict === 'DROPPED');
    assert.equal(dropped.length, merger.stats.dropped);
    assert.ok(dropped.length <= dropRecords.length && dropped.length > 0);
    // Every drop record ended in a DROPPED flow of its addresses and ports; none of those packets was also FORWARDED at the same moment.
    const key = (f: Flow): string => `${f.srcIp}:${f.srcPort}>${f.dstIp}:${f.dstPort}/${f.proto}`;
    const droppedKeys = new Set(dropped.map(key));
    for (const f of raw) assert.ok(droppedKeys.has(key(f)), `drop of ${key(f)} has no DROPPED flow`);
    const forwarded = flows.filter((f) => f.verdict === 'FORWARDED');
    for (const d of dropped) assert.ok(!forwarded.some((f) => key(f) === key(d) && Math.abs(f.timeMs - d.timeMs) < 10), `${key(d)} is also FORWARDED`);
    // The appearances of one packet are merged on its bytes: fewer flows than IP appearances.
    const ipAppearances = events.map((e) => decodeFrameEvent(e.id, e.timestamp, e.data)).filter(Boolean).length;
    assert.ok(flows.length * 2 < ipAppearances, `${flows.length} flows for ${ipAppearances} IP appearances`);
  });
});
