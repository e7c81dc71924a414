import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filterDumpRequest, parseFilterMessages, type TcFilter } from './tc-filters.js';
import { isLeftover, kernelProgName } from './tc-leftovers.js';

/** Netlink bytes: an attribute (len, type, payload padded to 4) or a message (nlmsghdr + body). */
const pad4 = (b: Buffer): Buffer => Buffer.concat([b, Buffer.alloc(((b.length + 3) & ~3) - b.length)]);
function tlv(type: number, payload: Buffer, header: 4 | 16, seq = 0): Buffer {
  const h = Buffer.alloc(header);
  if (header === 4) {
    h.writeUInt16LE(4 + payload.length, 0);
    h.writeUInt16LE(type, 2);
  } else {
    h.writeUInt32LE(16 + payload.length, 0);
    h.writeUInt16LE(type, 4);
    h.writeUInt32LE(seq, 8);
  }
  return pad4(Buffer.concat([h, payload]));
}
const u32 = (n: number): Buffer => Buffer.from(new Uint32Array([n]).buffer);
const str = (s: string): Buffer => Buffer.from(`${s}\0`);
const view = (b: Buffer): DataView => new DataView(b.buffer, b.byteOffset, b.length);

/** RTM_NEWTFILTER: tcmsg (handle, info = prio << 16 | protocol), TCA_KIND, TCA_CHAIN, TCA_OPTIONS. */
function newFilter(seq: number, kind: string, handle: number, prio: number, options: Buffer[] | undefined, chain = 0): Buffer {
  const tcm = Buffer.alloc(20);
  tcm.writeInt32LE(5, 4);
  tcm.writeUInt32LE(handle, 8);
  tcm.writeUInt32LE(0xfffffff2, 12);
  tcm.writeUInt32LE(((prio << 16) | 0x0300) >>> 0, 16);
  const attrs = [tlv(1, str(kind), 4), tlv(11, u32(chain), 4)];
  if (options) attrs.push(tlv(2 | 0x8000, Buffer.concat(options), 4));
  return tlv(44, Buffer.concat([tcm, ...attrs]), 16, seq);
}

describe('tc filter dumps', () => {
  it('the request is a 36-byte RTM_GETTFILTER dump of one interface and clsact parent', () => {
    const v = view(Buffer.from(filterDumpRequest(7, 12, 'egress')));
    assert.deepEqual(
      [v.byteLength, v.getUint32(0, true), v.getUint16(4, true), v.getUint16(6, true), v.getUint32(8, true), v.getInt32(20, true), v.getUint32(28, true)],
      [36, 36, 46, 0x301, 7, 12, 0xfffffff3],
    );
  });

  it('parses kind, handle, priority, chain and a bpf filter’s program id and name, until NLMSG_DONE', () => {
    const ours = [tlv(7, str('packetforward_i:[42]'), 4), tlv(11, u32(42), 4), tlv(10, Buffer.alloc(8, 0xab), 4)];
    const chunk = Buffer.concat([
      newFilter(3, 'bpf', 0, 0xc000, undefined), // the header of a priority: no handle, no options
      newFilter(3, 'bpf', 1, 0xc000, ours),
      newFilter(3, 'u32', 0x800, 100, [tlv(1, u32(0x10001), 4)]),
      newFilter(3, 'bpf', 1, 200, [tlv(5, Buffer.alloc(8), 4)], 2), // classic BPF (TCA_BPF_OPS) on chain 2
      tlv(3, Buffer.alloc(4), 16, 3),
    ]);
    const out: TcFilter[] = [];
    assert.equal(parseFilterMessages(view(chunk), chunk.length, 3, 'ingress', out), true);
    assert.deepEqual(out.map((f) => [f.kind, f.handle, f.priority, f.protocol, f.chain, f.progId, f.bpfName]), [
      ['bpf', 0, 0xc000, 0x0300, 0, undefined, undefined],
      ['bpf', 1, 0xc000, 0x0300, 0, 42, 'packetforward_i:[42]'],
      ['u32', 0x800, 100, 0x0300, 0, undefined, undefined],
      ['bpf', 1, 200, 0x0300, 2, undefined, undefined],
    ]);
  });

  it('ignores other dumps, throws on NLMSG_ERROR with the errno name and on a truncated message', () => {
    const other = newFilter(2, 'bpf', 1, 1, undefined);
    assert.equal(parseFilterMessages(view(other), other.length, 3, 'ingress', []), false);
    const err = Buffer.alloc(20);
    err.writeInt32LE(-22, 0);
    const e = tlv(2, err, 16, 3);
    assert.throws(() => parseFilterMessages(view(e), e.length, 3, 'ingress', []), /RTM_GETTFILTER failed: EINVAL/);
    assert.throws(() => parseFilterMessages(view(other), other.length - 4, 2, 'ingress', []), /truncated/);
  });
});

describe('which tc filters are ours (isLeftover)', () => {
  const names = new Set(['packetforward_ingress', 'packetparser_endpoint_ingress'].map(kernelProgName));
  const keep = new Set([50]);
  const f = (over: Partial<TcFilter>): TcFilter => ({
    direction: 'ingress', kind: 'bpf', handle: 1, priority: 0xc000, protocol: 0x0300, chain: 0, progId: 42, bpfName: 'packetforward_i:[42]', ...over,
  });
  const progs = new Map([[42, 'packetforward_i'], [43, 'cil_from_contai'], [44, 'packetforward_e'], [45, 'packetparser_en'], [50, 'packetforward_i']]);
  const nameOf = (id: number): string | undefined => progs.get(id);

  it('kernel names are the first 15 characters', () => {
    assert.deepEqual([...names], ['packetforward_i', 'packetparser_en']);
  });

  it('a bpf filter running another program with one of our names is a leftover', () => {
    assert.equal(isLeftover(f({}), names, keep, nameOf), true);
    assert.equal(isLeftover(f({ progId: 45, bpfName: 'packetparser_en:[45]' }), names, keep, nameOf), true);
  });

  it('never a program of this run, another name, another kind, another chain, or a header', () => {
    assert.equal(isLeftover(f({ progId: 50 }), names, keep, nameOf), false, 'ours, running now');
    assert.equal(isLeftover(f({ progId: 43, bpfName: 'bpf_lxc.o:[from-container]' }), names, keep, nameOf), false, "a CNI's program");
    assert.equal(isLeftover(f({ progId: 44, bpfName: 'packetforward_e:[44]' }), names, keep, nameOf), false, 'a name not asked for');
    assert.equal(isLeftover(f({ kind: 'u32', progId: undefined, bpfName: undefined }), names, keep, nameOf), false);
    assert.equal(isLeftover(f({ progId: undefined, bpfName: undefined }), names, keep, nameOf), false, 'classic BPF');
    assert.equal(isLeftover(f({ chain: 1 }), names, keep, nameOf), false);
    assert.equal(isLeftover(f({ handle: 0 }), names, keep, nameOf), false);
  });

  it("the program's name decides; libbpf's TCA_BPF_NAME only when the program cannot be opened", () => {
    assert.equal(isLeftover(f({ progId: 43, bpfName: 'packetforward_i:[43]' }), names, keep, nameOf), false, 'the name says ours, the program does not');
    assert.equal(isLeftover(f({ progId: 77, bpfName: 'packetforward_i:[77]' }), names, keep, () => undefined), true);
    assert.equal(isLeftover(f({ progId: 77, bpfName: 'foreign.o:[tc]' }), names, keep, () => undefined), false);
  });
});
