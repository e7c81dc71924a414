/**
 * Fuzzing the rtnetlink reply parsers (src/ffi/linux): link dumps (netlink.ts), tc filter dumps
 * (tc-filters.ts) and link notifications (link-events.ts). A recv buffer holds `len` new bytes and
 * whatever an earlier, longer read left after them: each parser must decode the same whatever those
 * leftovers are, throw only NetlinkError, and never loop.
 */
import assert from 'node:assert/strict';
import { LINK_STAT_NAMES, parseLinkMessages, type LinkInfo } from '../../src/ffi/linux/netlink.js';
import { NetlinkError } from '../../src/ffi/linux/rtnetlink.js';
import { parseFilterMessages, type TcFilter } from '../../src/ffi/linux/tc-filters.js';
import { countLinkMessages } from '../../src/ffi/linux/link-events.js';
import { bytes, embedded, fc, fuzzer, mutated, onlyThrows, timed } from './harness.js';

const fuzz = fuzzer(import.meta.url);

const le16 = (n: number): number[] => [n & 255, (n >> 8) & 255];
const le32 = (n: number): number[] => [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24];
const pad4 = (b: number[]): number[] => [...b, ...new Array<number>((4 - (b.length % 4)) % 4).fill(0)];

/** rtattr: len u16, type u16, payload, padded to 4. */
const attr = (type: number, payload: readonly number[]): number[] => pad4([...le16(4 + payload.length), ...le16(type), ...payload]);
const cstr = (s: string): number[] => [...Buffer.from(s, 'utf8'), 0];
const message = (type: number, seq: number, body: readonly number[]): number[] => pad4([...le32(16 + body.length), ...le16(type), ...le16(2), ...le32(seq), ...le32(1), ...body]);
const DONE = (seq: number): number[] => message(3, seq, [0, 0, 0, 0]);

/** Names as the kernel keeps them: UTF-8 without NUL. */
const name = fc.string({ unit: 'grapheme', maxLength: 15 }).filter((s) => !s.includes('\0'));

interface Link {
  readonly ifindex: number;
  readonly name: string;
  readonly kind: string;
  readonly stats: readonly number[] | undefined;
}
const linkArb: fc.Arbitrary<Link> = fc.record({
  ifindex: fc.integer({ min: 1, max: 0x7fffffff }),
  name,
  kind: name,
  stats: fc.option(fc.array(fc.maxSafeNat(), { minLength: LINK_STAT_NAMES.length, maxLength: LINK_STAT_NAMES.length }), { nil: undefined }),
});

function newLink(seq: number, l: Link): number[] {
  const stats = l.stats ? l.stats.flatMap((n) => [...le32(n % 2 ** 32), ...le32(Math.floor(n / 2 ** 32))]) : undefined;
  return message(16, seq, [
    0, 0, 0, 0, ...le32(l.ifindex), 0, 0, 0, 0, 0, 0, 0, 0,
    ...attr(3, cstr(l.name)), ...attr(4, [0xdc, 5, 0, 0]),
    ...(stats ? attr(23, stats) : []),
    ...(l.kind ? attr(18 | 0x8000, attr(1, cstr(l.kind))) : []),
  ]);
}

const dumpArb = fc.record({ seq: fc.integer({ min: 1, max: 0xffffffff }), links: fc.array(linkArb, { maxLength: 6 }), split: fc.nat() });

const u8 = (a: readonly number[]): Uint8Array => Uint8Array.from(a);

fuzz('netlink-link-roundtrip', dumpArb, ({ seq, links, split }) => {
  const msgs = links.map((l) => newLink(seq, l));
  const cut = msgs.length ? split % (msgs.length + 1) : 0;
  const chunks = [u8(msgs.slice(0, cut).flat()), u8([...msgs.slice(cut).flat(), ...DONE(seq)])];
  const out: LinkInfo[] = [];
  const done = chunks.map((c) => timed('parseLinkMessages', () => parseLinkMessages(new DataView(c.buffer), c.length, seq, out)));
  assert.deepEqual(done, [false, true]);
  assert.deepEqual(out, links.map((l) => ({ ...l })));
});

/** Parses `b` in a larger recv buffer whose bytes after `len` are `fill`. */
function inBuffer<T>(b: Uint8Array, fill: number, parse: (v: DataView, len: number) => T): { ok: true; value: T } | { ok: false; error: Error } {
  const { v } = embedded(b, 0, 64, fill);
  return onlyThrows([NetlinkError], () => parse(v, b.length));
}
const errorText = (r: { ok: boolean; error?: Error }): string | undefined => (r.ok ? undefined : r.error?.message);

const linkChunks = fc.oneof(
  mutated(dumpArb.map(({ seq, links }) => u8([...links.flatMap((l) => newLink(seq, l)), ...DONE(seq)]))),
  mutated(fc.constant(u8([...message(2, 5, [0xf0, 0xff, 0xff, 0xff]), ...DONE(5)]))),
  bytes(256),
);

fuzz('netlink-link-mutated', fc.tuple(linkChunks, fc.constantFrom(0, 1, 5)), ([b, seq]) => {
  const run = (fill: number): { r: ReturnType<typeof inBuffer<boolean>>; out: LinkInfo[] } => {
    const out: LinkInfo[] = [];
    return { r: timed('parseLinkMessages', () => inBuffer(b, fill, (v, len) => parseLinkMessages(v, len, seq, out))), out };
  };
  const a = run(0x00);
  const c = run(0xff);
  assert.deepEqual([a.r.ok && a.r.value, errorText(a.r), a.out], [c.r.ok && c.r.value, errorText(c.r), c.out], 'the parser read past len');
  assert.ok(a.out.length <= b.length / 32, `${a.out.length} links from ${b.length} bytes`);
});

// ---- tc filter dumps ---------------------------------------------------------------------------

interface Filter {
  readonly kind: string;
  readonly handle: number;
  readonly priority: number;
  readonly protocol: number;
  readonly chain: number;
  readonly progId: number;
  readonly bpfName: string;
}
const filterArb: fc.Arbitrary<Filter> = fc.record({
  kind: fc.oneof(fc.constant('bpf'), name), handle: fc.nat({ max: 0xffffffff }), priority: fc.nat({ max: 0xffff }),
  protocol: fc.nat({ max: 0xffff }), chain: fc.nat({ max: 0xffffffff }), progId: fc.nat({ max: 0xffffffff }), bpfName: name,
});

function newFilter(seq: number, f: Filter): number[] {
  return message(44, seq, [
    0, 0, 0, 0, ...le32(3), ...le32(f.handle), ...le32(0xfffffff2), ...le32(f.priority * 65536 + f.protocol),
    ...attr(1, cstr(f.kind)), ...attr(11, le32(f.chain)),
    ...attr(2 | 0x8000, [...attr(11, le32(f.progId)), ...attr(7, cstr(f.bpfName))]),
  ]);
}
const filterDump = fc.record({ seq: fc.integer({ min: 1, max: 0xffffffff }), filters: fc.array(filterArb, { maxLength: 5 }) });

fuzz('netlink-filter-roundtrip', filterDump, ({ seq, filters }) => {
  const b = u8([...filters.flatMap((f) => newFilter(seq, f)), ...DONE(seq)]);
  const out: TcFilter[] = [];
  assert.equal(timed('parseFilterMessages', () => parseFilterMessages(new DataView(b.buffer), b.length, seq, 'ingress', out)), true);
  const bpf = (f: Filter): boolean => f.kind === 'bpf';
  assert.deepEqual(out, filters.map((f) => ({
    direction: 'ingress', kind: f.kind, handle: f.handle, priority: f.priority, protocol: f.protocol, chain: f.chain,
    progId: bpf(f) ? f.progId : undefined, bpfName: bpf(f) ? f.bpfName : undefined,
  })));
});

const filterChunks = fc.oneof(mutated(filterDump.map(({ seq, filters }) => u8([...filters.flatMap((f) => newFilter(seq, f)), ...DONE(seq)]))), bytes(256));

fuzz('netlink-filter-mutated', fc.tuple(filterChunks, fc.constantFrom(0, 1, 7)), ([b, seq]) => {
  const run = (fill: number): { r: ReturnType<typeof inBuffer<boolean>>; out: TcFilter[] } => {
    const out: TcFilter[] = [];
    return { r: timed('parseFilterMessages', () => inBuffer(b, fill, (v, len) => parseFilterMessages(v, len, seq, 'egress', out))), out };
  };
  const a = run(0x00);
  const c = run(0xff);
  assert.deepEqual([a.r.ok && a.r.value, errorText(a.r), a.out], [c.r.ok && c.r.value, errorText(c.r), c.out], 'the parser read past len');
  assert.ok(a.out.length <= b.length / 36, `${a.out.length} filters from ${b.length} bytes`);
});

// ---- link notifications ------------------------------------------------------------------------

const notifications = fc.oneof(
  mutated(fc.array(linkArb, { maxLength: 4 }).map((ls) => u8(ls.flatMap((l, i) => (i % 2 ? message(17, 0, newLink(0, l).slice(16)) : newLink(0, l)))))),
  bytes(200),
);

fuzz('netlink-link-events', notifications, (b) => {
  const count = (fill: number): number => {
    const { v } = embedded(b, 0, 64, fill);
    return timed('countLinkMessages', () => onlyThrows([], () => countLinkMessages(v, b.length)) as { ok: true; value: number }).value;
  };
  const n = count(0);
  assert.equal(count(0xff), n, 'counted bytes past len');
  assert.ok(n <= b.length / 16, `${n} messages in ${b.length} bytes`);
});
