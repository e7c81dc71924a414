import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { decodeFrameEvent, decodeHeader, filetimeToMs } from './decode.js';
import { DROP_REASON_COUNT, dropReasonName } from './drop-reasons.js';
import { PacketMerger } from './merge.js';
import type { Flow } from '../../../flow/index.js';

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
    // DirTag 6, a vSwitch's Egress (out of the switch into a port): the port's endpoint receives it.
    assert.deepEqual([f.verdict, f.dropReason, f.proto, f.srcPort, f.direction], ['DROPPED', 'UnknownDropReason(4242)', 1, 0, 'INGRESS']);
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

/** DirTag values by PktMon's names (the provider's NetMon parser, windows.md A.7). */
const DIR_TAGS: Record<string, number> = { In: 1, Out: 2, Rx: 3, Tx: 4, Ingress: 5, Egress: 6 };

/** One appearance of an Ethernet IPv4 UDP frame 10.0.0.1:1000 -> 10.0.0.2:53 with `dirTag`, numbered 1. */
function frame(dirTag: number): Buffer {
  const b = Buffer.alloc(34 + 14 + 28);
  b.writeBigUInt64LE(7n, 0);
  b.writeUInt16LE(1, 8);
  b.writeUInt16LE(1, 10);
  b.writeUInt16LE(dirTag, 12);
  b.writeUInt16LE(1, 14);
  b.writeUInt16LE(70, 30);
  b.writeUInt16LE(42, 32);
  b.writeUInt16BE(0x0800, 34 + 12);
  Buffer.from('4500001c00010000401100000a0000010a000002', 'hex').copy(b, 48);
  return b;
}

describe('pktmon directions, on real PktMon text from a Windows Server 2022 L2Bridge container host (Windows-Containers#439)', () => {
  // PktMon's own counters name each component's directions: "Direction In = Rx" on a NIC or filter,
  // "Direction In = Egress" on a vSwitch component. "In" is what comes into the component's owner
  // (the host's stack, the pod's port): a packet the endpoint receives.
  const text = readFileSync(new URL('../../../../../test/fixtures/windows/real/pktmon-20348-l2bridge-counters.txt', import.meta.url), 'utf8');
  const pairs = [...text.matchAll(/Counters: Component (\d+),.*Direction In = (\w+) ,.*Direction Out = (\w+) ,/g)].map((m) => ({ component: Number(m[1]), in: m[2]!, out: m[3]! }));

  it('the text has both kinds: NIC/filter components (In = Rx) and a vSwitch component (In = Egress, Out = Ingress)', () => {
    assert.deepEqual(pairs.find((p) => p.component === 135), { component: 135, in: 'Egress', out: 'Ingress' });
    assert.ok(pairs.some((p) => p.in === 'Rx' && p.out === 'Tx'));
  });

  it('every component\'s In DirTag decodes as INGRESS and its Out DirTag as EGRESS', () => {
    for (const p of pairs) {
      for (const [name, want] of [[p.in, 'INGRESS'], [p.out, 'EGRESS']] as const) {
        const tag = DIR_TAGS[name];
        assert.ok(tag, `DirTag name ${name}`);
        assert.equal(decodeFrameEvent(160, 0n, frame(tag))?.direction, want, `component ${p.component}: ${name} (DirTag ${tag})`);
      }
    }
  });

  it('one table: the merged flow of a packet seen once has the direction its appearance decodes to, for every DirTag', () => {
    for (const tag of Object.values(DIR_TAGS)) {
      const out: Flow[] = [];
      const m = new PacketMerger();
      m.push([{ id: 160, timestamp: 0n, data: frame(tag) }], out);
      m.flush(out);
      assert.equal(out[0]?.direction, decodeFrameEvent(160, 0n, frame(tag))?.direction, `DirTag ${tag}`);
    }
  });
});
