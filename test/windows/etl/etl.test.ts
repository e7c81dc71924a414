/**
 * The test ETL reader against real PktMon captures (test/fixtures/windows/real/SOURCES.md): the
 * compressed buffers decompress to the sizes the buffers name, the event counts are those
 * tracerpt/pktmon reported for the same file, and the first 300 packet events read the same as
 * pktmon's own text output of that file (etl2txt, kept alongside).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { readEtl, xpressDecompress } from './etl.js';

const REAL = new URL('../../../../test/fixtures/windows/real/', import.meta.url);
const PKTMON = '4d4f80d9-c8bd-4d73-bb5b-19c90402c5ac';
const count = (events: readonly { id: number; provider: string }[], id: number): number => events.filter((e) => e.provider === PKTMON && e.id === id).length;

describe('ETL reader on real PktMon captures', () => {
  it('Windows 10 19042 (WiFi laptop): 5 buffers, 4 XPRESS-compressed; 3646 packet events as the capture\'s own summary says', () => {
    const r = readEtl(readFileSync(new URL('pktmon-19042-wifi.etl', REAL)));
    assert.equal(r.buffers, 5);
    assert.equal(r.compressedBuffers, 4);
    assert.equal(r.eventsLost, 0);
    // summary.txt next to the capture in its repository: 4514 PktMon events, 3646 of them event 160, 131 event 20, 279 event 30.
    assert.equal(r.events.filter((e) => e.provider === PKTMON).length, 4514);
    assert.equal(count(r.events, 160), 3646);
    assert.equal(count(r.events, 20), 131);
    assert.equal(count(r.events, 30), 279);
  });

  it('the first 300 packet events read as pktmon etl2txt printed them (group, number, appearance, direction, type, component, edge, sizes, time)', () => {
    const r = readEtl(readFileSync(new URL('pktmon-19042-wifi.etl', REAL)));
    const packets = r.events.filter((e) => e.provider === PKTMON && e.id === 160);
    const lines = readFileSync(new URL('pktmon-19042-wifi.txt', REAL), 'utf8').split('\n').filter(Boolean);
    assert.equal(lines.length, 300);
    const dirs = ['', 'In', 'Out', 'Rx', 'Tx', 'Ingress', 'Egress'];
    const types = ['', 'Ethernet', 'WiFi', 'IP'];
    lines.forEach((line, i) => {
      const m = /:(\d\d)\.(\d{9}) \[Microsoft-Windows-PktMon\] PktGroupId (\d+), PktNumber (\d+), Appearance (\d+), Direction (\w+) , Type (\w+) , Component (\d+), Edge (\d+), Filter (\d+), OriginalSize (\d+), LoggedSize (\d+)$/.exec(line);
      assert.ok(m, `line ${i + 1} does not parse: ${line}`);
      const e = packets[i];
      assert.ok(e);
      const d = Buffer.from(e.data);
      const got = [
        String(d.readBigUInt64LE(0)), String(d.readUInt16LE(8)), String(d.readUInt16LE(10)), dirs[d.readUInt16LE(12)], types[d.readUInt16LE(14)],
        String(d.readUInt16LE(16)), String(d.readUInt16LE(18)), String(d.readUInt16LE(20)), String(d.readUInt16LE(30)), String(d.readUInt16LE(32)),
      ];
      assert.deepEqual(got, m.slice(3), `event ${i + 1}`);
      assert.equal(d.length, 34 + d.readUInt16LE(32), `event ${i + 1}: the header and the logged bytes`);
      // pktmon prints local time: the seconds and the 100 ns ticks within the minute match the FILETIME.
      const ticks = e.timestamp % 600_000_000n;
      assert.equal(ticks, BigInt(m[1]!) * 10_000_000n + BigInt(m[2]!) / 100n, `event ${i + 1} time`);
    });
  });

  it('Windows Server 2022 (20348, a Microsoft repository\'s capture): 114 packet events of 38 packets, Ethernet', () => {
    const r = readEtl(readFileSync(new URL('pktmon-20348-server2022.etl', REAL)));
    const packets = r.events.filter((e) => e.provider === PKTMON && e.id === 160);
    assert.equal(packets.length, 114);
    assert.equal(new Set(packets.map((e) => `${Buffer.from(e.data).readBigUInt64LE(0)}/${Buffer.from(e.data).readUInt16LE(8)}`)).size, 38);
    assert.ok(packets.every((e) => Buffer.from(e.data).readUInt16LE(14) === 1));
  });

  it('Windows 11 26200: drop events (170) of bare IP packets (PacketType 3) with PktMon drop reasons', () => {
    const r = readEtl(readFileSync(new URL('pktmon-26200-drops.etl', REAL)));
    const drops = r.events.filter((e) => e.provider === PKTMON && e.id === 170).map((e) => Buffer.from(e.data));
    assert.equal(drops.length, 28);
    assert.equal(count(r.events, 160), 378);
    const first = drops[0]!;
    assert.deepEqual([first.readUInt16LE(14), first.readUInt32LE(22), first[34]! >> 4], [3, 1204, 4], 'PacketType 3, Drop_INET_EndpointNotFound, an IPv4 header right after the 34 bytes');
  });

  it('xpress: literals, a match that overlaps its own output, and a buffer that says more than it holds', () => {
    // flags 0b0110 << 28: literal 'a', then a match (offset 1, length 3+2), then literal 'b'.
    const input = Uint8Array.from([0x00, 0x00, 0x00, 0x40, 0x61, 0x02, 0x00, 0x62]);
    assert.equal(Buffer.from(xpressDecompress(input, 7)).toString(), 'aaaaaab');
    assert.throws(() => xpressDecompress(input, 9), /7 bytes decompressed, the buffer says 9/);
  });
});
