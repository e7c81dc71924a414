import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { decodeFrameEvent, decodeHeader, filetimeToMs } from './decode.js';
import { DROP_REASON_COUNT, dropReasonName } from './drop-reasons.js';

/** test/fixtures/windows/pktmon-events.txt: synthetic events built from the documented layout. */
const events = readFileSync(new URL('../../../../../test/fixtures/windows/pktmon-events.txt', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l && !l.startsWith('#'))
  .map((l) => {
    const [id, ts, hex] = l.split(' ') as [string, string, string];
    return { id: Number(id), ts: BigInt(ts), data: Buffer.from(hex, 'hex') };
  });

const decode = (i: number) => {
  const e = events[i];
  assert.ok(e, `fixture event ${i}`);
  return decodeFrameEvent(e.id, e.ts, e.data);
};

describe('pktmon decode (synthetic frames; real captures: test/windows/etl/pktmon-real.test.ts)', () => {
  it('reads the 34-byte header', () => {
    const h = decodeHeader(new DataView(events[1]!.data.buffer, events[1]!.data.byteOffset, events[1]!.data.byteLength));
    assert.deepEqual(h, { dirTag: 1, packetType: 1, componentId: 7, dropReason: 912, dropLocation: 3, originalSize: 46, loggedSize: 46 });
  });

  it('an IPv4 TCP frame event is a FORWARDED egress flow with ports, flags, original size and time', () => {
    const f = decode(0);
    assert.ok(f);
    assert.equal(f.verdict, 'FORWARDED');
    assert.deepEqual([f.srcIp, f.srcPort, f.dstIp, f.dstPort, f.proto, f.ipVersion], ['10.0.0.5', 40000, '10.0.0.9', 80, 6, 4]);
    assert.equal(f.tcpFlags, 0x02);
    assert.equal(f.direction, 'EGRESS');
    assert.equal(f.bytes, 74);
    assert.equal(f.dropReason, '');
    assert.equal(f.timeMs, filetimeToMs(133_000_000_000_000_000n));
    assert.equal(new Date(f.timeMs).toISOString(), '2022-06-18T04:26:40.000Z');
  });

  it('a drop event behind a VLAN tag is DROPPED ingress with PktMon\'s reason name', () => {
    const f = decode(1);
    assert.ok(f);
    assert.deepEqual([f.verdict, f.dropReason, f.direction], ['DROPPED', 'Drop_NL_BadChecksum', 'INGRESS']);
    assert.deepEqual([f.srcIp, f.srcPort, f.dstIp, f.dstPort, f.proto], ['10.0.0.9', 53, '10.0.0.5', 5353, 17]);
    assert.equal(f.timeMs - filetimeToMs(133_000_000_000_000_000n), 1);
  });

  it('IPv6 addresses are in RFC 5952 form', () => {
    const f = decode(2);
    assert.ok(f);
    assert.deepEqual([f.srcIp, f.dstIp, f.ipVersion, f.srcPort, f.dstPort, f.tcpFlags, f.bytes], ['fd00::5', 'fd00::1', 6, 443, 50000, 0x18, 1514]);
  });

  it('a reason outside the table reads UnknownDropReason(n), as Retina prints it', () => {
    const f = decode(3);
    assert.ok(f);
    assert.deepEqual([f.verdict, f.dropReason, f.proto, f.srcPort, f.direction], ['DROPPED', 'UnknownDropReason(4242)', 1, 0, 'EGRESS']);
  });

  it('non-IP, non-Ethernet and truncated frames give no flow', () => {
    assert.equal(decode(4), undefined);
    assert.equal(decode(5), undefined);
    assert.equal(decode(6), undefined);
  });

  it('a record shorter than the header is an error naming the layout', () => {
    assert.throws(() => decodeFrameEvent(160, 0n, new Uint8Array(20)), /20 bytes, shorter than its 34-byte header/);
  });

  it('the drop-reason table has PktMon\'s names', () => {
    assert.equal(DROP_REASON_COUNT, 403);
    assert.equal(dropReasonName(0), 'Drop_Unknown');
    assert.equal(dropReasonName(1), 'Drop_InvalidData');
    assert.equal(dropReasonName(1210), 'Drop_INET_Rst');
    assert.equal(dropReasonName(4000), 'Drop_Http_End');
  });
});
