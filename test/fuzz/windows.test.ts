/**
 * Fuzzing the Windows parsers (pure TypeScript, run on Linux): HCN/HNS JSON documents
 * (src/ffi/windows/documents.ts), vfpctrl's counter text and the batched command output (vfp.ts,
 * vfpctrl.ts), GUIDs, and PktMon ETW frame events (src/plugins/windows/pktmon/decode.ts). Documents
 * either parse or throw an Error naming the call or document; never a TypeError.
 */
import assert from 'node:assert/strict';
import { hnsOutput, parseEndpoint, parseEndpointIds, parseEndpointStats, parsePortMap } from '../../src/ffi/windows/documents.js';
import { parseGuid } from '../../src/ffi/windows/guid.js';
import { parseVfpCounters } from '../../src/ffi/windows/vfp.js';
import { splitVfpOutput, vfpCommand } from '../../src/ffi/windows/vfpctrl.js';
import { EVENT_FRAME, EVENT_FRAME_DROP, HEADER_SIZE, decodeFrameEvent } from '../../src/plugins/windows/pktmon/decode.js';
import { bytes, fc, fuzzer, mutated, onlyThrows, timed } from './harness.js';

const fuzz = fuzzer(import.meta.url);

// ---- HCN / HNS JSON ----------------------------------------------------------------------------

/** JSON values as HNS writes them, big counters included (digits past 2^53 as they are on the wire). */
const scalar = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.maxSafeNat(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }));
const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 6 }), tie('v'), { maxKeys: 3 })),
})).v;
/** JSON text, bigints written as plain digits (as HNS does for u64 counters). */
const json = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `@@${x}@@` : x)).replace(/"@@(\d+)@@"/g, '$1');

const statsField = fc.oneof(scalar, value);
const statsDoc = fc.record({
  Success: fc.oneof(fc.constant(true), fc.constant(false), scalar),
  Error: fc.oneof(scalar, value),
  Output: fc.oneof(fc.record({ PacketsReceived: statsField, PacketsSent: statsField, BytesReceived: statsField, BytesSent: statsField, DroppedPacketsIncoming: statsField, DroppedPacketsOutgoing: statsField }, { requiredKeys: [] }), value),
}, { requiredKeys: [] });
const endpointDoc = fc.record({
  ID: fc.oneof(fc.uuid(), scalar), MacAddress: fc.oneof(fc.constant('00-15-5D-00-00-01'), scalar),
  IpConfigurations: fc.oneof(fc.array(fc.oneof(fc.record({ IpAddress: fc.oneof(fc.ipV4(), scalar), PrefixLength: fc.nat(32) }), value), { maxLength: 2 }), value),
}, { requiredKeys: [] });
const portMapDoc = fc.record({
  Success: fc.constant(true),
  Output: fc.oneof(fc.array(fc.oneof(fc.record({ ID: fc.oneof(fc.uuid(), scalar), Resources: fc.oneof(fc.record({ Allocators: fc.oneof(fc.array(fc.oneof(
    fc.record({ Tag: fc.oneof(fc.constant('Endpoint Port'), scalar), EndpointPortGuid: fc.oneof(fc.uuid(), scalar) }), value), { maxLength: 3 }), value) }), value) }), value), { maxLength: 3 }), value),
});

/** JSON built from the shapes, mutated JSON text, and any text. */
const docText = (shape: fc.Arbitrary<unknown>): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: shape.map(json), weight: 4 },
    { arbitrary: mutated(shape.map((d) => new Uint8Array(Buffer.from(json(d))))).map((b) => Buffer.from(b).toString('utf8')), weight: 2 },
    { arbitrary: value.map(json), weight: 1 },
    { arbitrary: fc.string({ maxLength: 40 }), weight: 1 },
  );

/** Only an Error whose message starts with `prefix` (the call or document it names). */
function named<T>(prefix: string, fn: () => T): T | undefined {
  const r = timed(prefix, () => onlyThrows([Error], fn));
  if (r.ok) return r.value;
  assert.ok(r.error.message.startsWith(prefix), `the error does not name ${prefix}: ${r.error.message}`);
  return undefined;
}

fuzz('hns-endpointstats', docText(statsDoc), (text) => {
  const s = named('GET /endpointstats/ep1', () => parseEndpointStats(text, 'ep1'));
  if (s) for (const [k, v] of Object.entries(s)) assert.ok(typeof v === 'bigint' && v >= 0n, `${k} = ${String(v)}`);
});

fuzz('hns-endpointstats-roundtrip', fc.array(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), { minLength: 6, maxLength: 6 }), (n) => {
  const names = ['PacketsReceived', 'PacketsSent', 'BytesReceived', 'BytesSent', 'DroppedPacketsIncoming', 'DroppedPacketsOutgoing'];
  const text = json({ Success: true, Output: Object.fromEntries(names.map((k, i) => [k, n[i]])) });
  const s = parseEndpointStats(text, 'ep1');
  assert.deepEqual([s.packetsReceived, s.packetsSent, s.bytesReceived, s.bytesSent, s.droppedIncoming, s.droppedOutgoing], n);
});

fuzz('hcn-endpoint', docText(endpointDoc), (text) => {
  const e = named('endpoint ep1', () => parseEndpoint(text, 'ep1'));
  if (e) assert.ok(typeof e.id === 'string' && typeof e.mac === 'string' && (e.ip === undefined || typeof e.ip === 'string'));
});

fuzz('hcn-enumerate', docText(fc.oneof(fc.array(fc.uuid(), { maxLength: 3 }), value)), (text) => {
  const ids = named('HcnEnumerateEndpoints', () => parseEndpointIds(text));
  if (ids) assert.ok(ids.every((x) => typeof x === 'string'));
});

fuzz('hns-portmap', docText(portMapDoc), (text) => {
  const m = named('GET /endpoints/', () => parsePortMap(text));
  if (m) for (const [k, v] of m) assert.ok(typeof k === 'string' && typeof v === 'string');
});

fuzz('hns-output', docText(statsDoc), (text) => void named('GET /x', () => hnsOutput(text, 'GET /x')));

// ---- vfpctrl -----------------------------------------------------------------------------------

const VFP_LINES: readonly [string, string][] = [
  ['SYN packets', 'syn'], ['SYN-ACK packets', 'synAck'], ['FIN packets', 'fin'], ['RST packets', 'rst'], ['TCP Connections Verified', 'verified'],
  ['TCP Connections Timed Out', 'timedOut'], ['TCP Connections Reset', 'reset'], ['TCP Connections Reset by SYN', 'resetBySyn'],
  ['TCP Connections Closed by FIN', 'closedByFin'], ['TCP Half Open Timeouts', 'halfOpenTimeouts'], ['TCP Connections Expired to Time Wait', 'timeWaitExpired'],
  ['Dropped ACL packets', 'aclDrops'],
];
const FIELDS = new Set(VFP_LINES.map((x) => x[1]));
const countersArb = fc.record({ out: fc.array(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), { minLength: 12, maxLength: 12 }), in: fc.array(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), { minLength: 12, maxLength: 12 }), crlf: fc.boolean() });
const countersText = (c: { out: bigint[]; in: bigint[]; crlf: boolean }): string =>
  ['', 'ITEM LIST', '===========', '', 'Direction - OUT', ...VFP_LINES.map(([l], i) => `   ${l} : ${c.out[i]}`), '   Pending packets : 0', '   Port state : Enabled', '',
    'Direction - IN', ...VFP_LINES.map(([l], i) => `   ${l} : ${c.in[i]}`), '', 'Command get-port-counter succeeded!', ''].join(c.crlf ? '\r\n' : '\n');

fuzz('vfp-counters-roundtrip', countersArb, (c) => {
  const r = timed('parseVfpCounters', () => parseVfpCounters(countersText(c)));
  assert.deepEqual(r.issues, []);
  assert.deepEqual(r.out, Object.fromEntries(VFP_LINES.map(([, f], i) => [f, c.out[i]])));
  assert.deepEqual(r.in, Object.fromEntries(VFP_LINES.map(([, f], i) => [f, c.in[i]])));
});

const vfpLike = fc.oneof(
  mutated(countersArb.map((c) => new Uint8Array(Buffer.from(countersText(c))))).map((b) => Buffer.from(b).toString('latin1')),
  fc.array(fc.oneof(fc.constantFrom('Direction - IN', 'Direction - OUT', 'SYN packets : 1,234', 'constructor : 5', '__proto__ : 7', 'toString : 1', 'hasOwnProperty: 2', ': 3', 'SYN packets :'),
    fc.string({ maxLength: 20 })), { maxLength: 8 }).map((l) => l.join('\n')),
);
fuzz('vfp-counters-mutated', vfpLike, (text) => {
  const r = timed('parseVfpCounters', () => onlyThrows([], () => parseVfpCounters(text)) as { ok: true; value: ReturnType<typeof parseVfpCounters> }).value;
  for (const d of [r.out, r.in]) {
    for (const [k, v] of Object.entries(d)) {
      assert.ok(FIELDS.has(k), `unknown counter ${JSON.stringify(k)}`);
      assert.ok(typeof v === 'bigint' && v >= 0n);
    }
  }
  assert.ok(r.issues.length <= text.split('\n').length);
});

const portName = fc.stringMatching(/^[0-9A-Za-z{}-]{1,64}$/);
fuzz('vfpctrl-output-roundtrip', fc.uniqueArray(fc.tuple(portName, countersArb.map(countersText)), { maxLength: 4, selector: (x) => x[0] }), (ports) => {
  assert.doesNotThrow(() => vfpCommand(ports.map((p) => p[0])));
  // What cmd.exe prints for `echo @@retina-vfp-port <p>@@ & call vfpctrl ...`: the marker line, then vfpctrl's output.
  const text = ports.map(([p, body]) => `@@retina-vfp-port ${p}@@ \r\n${body}`).join('');
  const m = timed('splitVfpOutput', () => splitVfpOutput(text));
  assert.deepEqual([...m.keys()], ports.map((p) => p[0]));
  for (const [p, body] of ports) assert.deepEqual(parseVfpCounters(m.get(p) as string), parseVfpCounters(body));
});

fuzz('vfpctrl-output-random', fc.string({ maxLength: 200 }), (text) => void timed('splitVfpOutput', () => splitVfpOutput(text)));

// ---- GUIDs -------------------------------------------------------------------------------------

/** The GUID parseGuid read, printed back in the canonical upper-case form (how HNS prints IDs). */
function normalizeGuid(text: string): string {
  const g = parseGuid(text);
  const h = (n: number, w: number): string => n.toString(16).toUpperCase().padStart(w, '0');
  const d4 = g.Data4.map((b) => h(b, 2)).join('');
  return `${h(g.Data1, 8)}-${h(g.Data2, 4)}-${h(g.Data3, 4)}-${d4.slice(0, 4)}-${d4.slice(4)}`;
}

fuzz('guid-roundtrip', fc.tuple(fc.uuid(), fc.boolean(), fc.boolean()), ([u, braces, upper]) => {
  const text = `${braces ? '{' : ''}${upper ? u.toUpperCase() : u}${braces ? '}' : ''}`;
  assert.equal(normalizeGuid(text), u.toUpperCase());
  const g = parseGuid(text);
  assert.equal(g.Data4.length, 8);
});
fuzz('guid-random', fc.string({ maxLength: 40 }), (s) => {
  const r = onlyThrows([Error], () => normalizeGuid(s));
  if (r.ok) assert.match(r.value, /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/);
});

// ---- PktMon frame events -----------------------------------------------------------------------

const frameArb = fc.record({
  dirTag: fc.nat(8), drop: fc.nat({ max: 0xffffffff }), six: fc.boolean(), vlan: fc.boolean(), proto: fc.constantFrom(6, 17, 1),
  /** IPv4 header length in words: 5, or a lying one below the minimum. */
  ihl: fc.constantFrom(5, 5, 5, 5, 0, 1, 4),
  src: fc.uint8Array({ minLength: 16, maxLength: 16 }), dst: fc.uint8Array({ minLength: 16, maxLength: 16 }), sport: fc.nat(0xffff), dport: fc.nat(0xffff), flags: fc.nat(0x1ff), size: fc.nat(0xffff),
});
type Frame = typeof frameArb extends fc.Arbitrary<infer T> ? T : never;
function frameEvent(f: Frame): Uint8Array {
  const l4 = f.proto === 6 ? [f.sport >> 8, f.sport & 255, f.dport >> 8, f.dport & 255, 0, 0, 0, 0, 0, 0, 0, 0, 0x50 | (f.flags >> 8), f.flags & 255, 0, 0, 0, 0, 0, 0]
    : f.proto === 17 ? [f.sport >> 8, f.sport & 255, f.dport >> 8, f.dport & 255, 0, 8, 0, 0] : [8, 0, 0, 0];
  const ip = f.six ? [0x60, 0, 0, 0, 0, l4.length, f.proto, 64, ...f.src, ...f.dst] : [0x40 | f.ihl, 0, 0, 20 + l4.length, 0, 0, 0, 0, 64, f.proto, 0, 0, ...f.src.subarray(0, 4), ...f.dst.subarray(0, 4)];
  const eth = [...new Array<number>(12).fill(1), ...(f.vlan ? [0x81, 0, 0, 5] : []), ...(f.six ? [0x86, 0xdd] : [0x08, 0x00])];
  const payload = [...eth, ...ip, ...l4];
  const h = new DataView(new ArrayBuffer(HEADER_SIZE));
  h.setUint16(12, f.dirTag, true);
  h.setUint16(14, 1, true);
  h.setUint32(22, f.drop, true);
  h.setUint16(30, f.size, true);
  h.setUint16(32, payload.length, true);
  return Uint8Array.from([...new Uint8Array(h.buffer), ...payload]);
}
const v6 = (b: Uint8Array): string => new URL(`http://[${[0, 2, 4, 6, 8, 10, 12, 14].map((i) => ((b[i] as number) * 256 + (b[i + 1] as number)).toString(16)).join(':')}]/`).hostname.slice(1, -1);
const mapped = (b: Uint8Array): boolean => b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;

fuzz('pktmon-frame-roundtrip', fc.tuple(frameArb, fc.constantFrom(EVENT_FRAME, EVENT_FRAME_DROP)), ([f, id]) => {
  const flow = timed('decodeFrameEvent', () => decodeFrameEvent(id, 116_444_736_000_000_000n + 10_000n, frameEvent(f)));
  assert.ok(flow, 'a valid frame gave no flow');
  const dropped = id === EVENT_FRAME_DROP || f.drop !== 0;
  // Ports only from a real transport header (not from inside an IPv4 header whose length field lies).
  const ports = f.proto !== 1 && (f.six || f.ihl >= 5);
  const ip = (b: Uint8Array): string => (f.six ? (mapped(b) ? `::ffff:${[...b.subarray(12)].join('.')}` : v6(b)) : [...b.subarray(0, 4)].join('.'));
  assert.deepEqual(
    [flow.verdict, flow.ipVersion, flow.proto, flow.srcIp, flow.dstIp, flow.srcPort, flow.dstPort, flow.tcpFlags, flow.bytes, flow.timeMs],
    [dropped ? 'DROPPED' : 'FORWARDED', f.six ? 6 : 4, f.proto, ip(f.src), ip(f.dst), ports ? f.sport : 0, ports ? f.dport : 0, ports && f.proto === 6 ? f.flags : 0, f.size, 1],
  );
});

/** Random and mutated events inside a larger buffer: the decoder's Error or a result that does not depend on the bytes after the event. */
fuzz('pktmon-frame-mutated', fc.tuple(fc.oneof(mutated(frameArb.map(frameEvent)), bytes(120)), fc.constantFrom(EVENT_FRAME, EVENT_FRAME_DROP)), ([b, id]) => {
  const run = (fill: number): unknown => {
    const big = new Uint8Array(b.length + 64).fill(fill);
    big.set(b);
    const r = timed('decodeFrameEvent', () => onlyThrows([Error], () => decodeFrameEvent(id, 0n, big.subarray(0, b.length))));
    return r.ok ? r.value : r.error.message;
  };
  assert.deepEqual(run(0), run(0xff), 'the decoder read past the event');
});
