import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LINK_STAT_NAMES, linkDumpRequest, parseLinkMessages, type LinkInfo } from './netlink.js';

/** rtattr: len u16, type u16, payload, padded to 4. */
function attr(type: number, payload: Buffer): Buffer {
  const len = 4 + payload.length;
  const b = Buffer.alloc((len + 3) & ~3);
  b.writeUInt16LE(len, 0);
  b.writeUInt16LE(type, 2);
  payload.copy(b, 4);
  return b;
}
const str = (s: string): Buffer => Buffer.from(`${s}\0`);

/** One nlmsghdr message of `type` with `body`. */
function message(type: number, seq: number, body: Buffer): Buffer {
  const b = Buffer.alloc(16 + body.length);
  b.writeUInt32LE(b.length, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt16LE(2, 6); // NLM_F_MULTI
  b.writeUInt32LE(seq, 8);
  body.copy(b, 16);
  return b;
}

/** RTM_NEWLINK: ifinfomsg, IFLA_IFNAME, IFLA_STATS64 (u64 counters), IFLA_LINKINFO{IFLA_INFO_KIND}. */
function newLink(seq: number, ifindex: number, name: string, kind: string | undefined, stats: bigint[] | undefined, master?: number): Buffer {
  const ifi = Buffer.alloc(16);
  ifi.writeInt32LE(ifindex, 4);
  const parts = [ifi, attr(3, str(name)), attr(4, Buffer.from([0xdc, 0x05, 0, 0]))]; // IFLA_MTU, ignored
  if (master !== undefined) {
    const m = Buffer.alloc(4);
    m.writeUInt32LE(master);
    parts.push(attr(10, m)); // IFLA_MASTER
  }
  if (stats) {
    const s = Buffer.alloc(stats.length * 8);
    stats.forEach((v, i) => s.writeBigUInt64LE(v, i * 8));
    parts.push(attr(23, s));
  }
  if (kind !== undefined) parts.push(attr(18 | 0x8000, attr(1, str(kind)))); // NLA_F_NESTED
  return message(16, seq, Buffer.concat(parts));
}

const view = (b: Buffer): DataView => new DataView(b.buffer, b.byteOffset, b.length);

describe('netlink link dumps', () => {
  it('the request is a 32-byte RTM_GETLINK dump of every link', () => {
    const v = view(Buffer.from(linkDumpRequest(7)));
    assert.deepEqual([v.byteLength, v.getUint32(0, true), v.getUint16(4, true), v.getUint16(6, true), v.getUint32(8, true)], [32, 32, 18, 0x301, 7]);
  });

  it('parses names, kinds and 64-bit counters, message after message, until NLMSG_DONE', () => {
    const stats = LINK_STAT_NAMES.map((_, i) => BigInt(i + 1));
    stats[2] = 2n ** 40n + 5n; // rx_bytes above 2^32
    const stats25 = [...stats, 99n]; // a newer kernel's rx_otherhost_dropped is ignored
    const chunk1 = Buffer.concat([newLink(9, 1, 'lo', undefined, stats), newLink(9, 12, 'veth1a2b', 'veth', stats25, 13)]);
    const out: LinkInfo[] = [];
    assert.equal(parseLinkMessages(view(chunk1), chunk1.length, 9, out), false, 'not done yet');
    const chunk2 = Buffer.concat([newLink(9, 13, 'br0', 'bridge', undefined), message(3, 9, Buffer.alloc(4))]);
    assert.equal(parseLinkMessages(view(chunk2), chunk2.length, 9, out), true);
    assert.deepEqual(out.map((l) => [l.ifindex, l.name, l.kind, l.stats?.length, l.master]), [[1, 'lo', '', 24, undefined], [12, 'veth1a2b', 'veth', 24, 13], [13, 'br0', 'bridge', undefined, undefined]]);
    assert.equal('master' in (out[0] ?? {}), false, 'no master: no key');
    assert.equal(out[1]?.stats?.[LINK_STAT_NAMES.indexOf('rx_bytes')], 2 ** 40 + 5);
    assert.equal(out[1]?.stats?.[LINK_STAT_NAMES.indexOf('rx_nohandler')], 24);
  });

  it('ignores messages of another dump, and reads only `len` bytes of the buffer', () => {
    const b = Buffer.concat([newLink(4, 1, 'old', '', undefined), newLink(5, 2, 'eth0', '', undefined), Buffer.alloc(64, 0xff)]);
    const out: LinkInfo[] = [];
    assert.equal(parseLinkMessages(view(b), b.length - 64, 5, out), false);
    assert.deepEqual(out.map((l) => l.name), ['eth0']);
  });

  it('an NLMSG_ERROR throws with the errno name; a truncated message throws', () => {
    const err = Buffer.alloc(20);
    err.writeInt32LE(-1, 0); // -EPERM
    const e = message(2, 3, err);
    assert.throws(() => parseLinkMessages(view(e), e.length, 3, []), /RTM_GETLINK failed: EPERM/);
    const m = newLink(3, 1, 'eth0', '', undefined);
    assert.throws(() => parseLinkMessages(view(m), m.length - 4, 3, []), /truncated/);
  });
});
