/**
 * Fuzzing the /proc and /sys text readers: /proc/net/{netstat,snmp} (header/values pairs),
 * /proc/net/snmp6 (name value lines), /proc/net/{tcp,udp}[6] socket tables (linuxutil), and the
 * sysfs counters of infiniband. Files are written here in the kernel's format from arbitrary content
 * and parsed back (round trip); mutated and random texts never throw, keep at most a few issues per
 * file, and give only finite counters.
 */
import assert from 'node:assert/strict';
import { parseNameValueLines, parseSectionPairs } from '../../src/plugins/linux/linuxutil/counters.js';
import { TCP_STATES, parseSocketTable } from '../../src/plugins/linux/linuxutil/sockets.js';
import { SysfsValueError, parseSysfsUint } from '../../src/plugins/linux/infiniband/decode.js';
import { fc, fuzzer, mutated, onlyThrows, timed } from './harness.js';

const fuzz = fuzzer(import.meta.url);

/**
 * Any text: bytes as latin1 (control characters, high bytes) or Unicode graphemes. (fast-check's
 * `unit: 'binary'` builds a table of every code point first: seconds per worker.)
 */
const anyText = (max: number): fc.Arbitrary<string> =>
  fc.oneof(fc.uint8Array({ maxLength: max }).map((b) => Buffer.from(b).toString('latin1')), fc.string({ unit: 'grapheme', maxLength: max }));

/** Mutations of a valid text (bytes changed, cut, inserted, dropped), or any text. */
const textLike = (valid: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    valid,
    mutated(valid.map((s) => new Uint8Array(Buffer.from(s, 'latin1')))).map((b) => Buffer.from(b).toString('latin1')),
    anyText(300),
    fc.array(fc.oneof(valid, fc.constantFrom('', ' ', '\t', 'Tcp:', 'Tcp: 1', ': 1', '0: ', '-', '99999999999999999999999999', 'Tcp: MaxConn', 'Tcp: 1'.padEnd(400, '9'), 'Ip6InReceives 1'.padEnd(400, '0'))), { maxLength: 5 }).map((p) => p.join('\n')),
  );

const MAX_ISSUES = 6; // five messages and one "N more problem(s)"

const word = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,11}$/);
const counter = fc.oneof(fc.maxSafeNat(), fc.integer({ min: -1, max: 1 }));

const sectionsArb = fc.uniqueArray(fc.tuple(word, fc.uniqueArray(fc.tuple(word, counter), { minLength: 1, maxLength: 8, selector: (x) => x[0] })), {
  maxLength: 5, selector: (x) => x[0],
});
const sectionsText = (ss: [string, [string, number][]][]): string =>
  ss.map(([n, kv]) => `${n}: ${kv.map((x) => x[0]).join(' ')}\n${n}: ${kv.map((x) => x[1]).join(' ')}\n`).join('');

function allFinite(m: ReadonlyMap<string, unknown>): void {
  for (const [k, v] of m) {
    if (v instanceof Map) allFinite(v);
    else assert.ok(Number.isFinite(v), `${k} = ${String(v)} is not a finite number`);
  }
}

fuzz('proc-sections-roundtrip', sectionsArb, (ss) => {
  const r = timed('parseSectionPairs', () => parseSectionPairs(sectionsText(ss), 'netstat'));
  assert.deepEqual(r.issues, ss.length ? [] : ['netstat: empty file']);
  assert.deepEqual(r.value, new Map(ss.map(([n, kv]) => [n, new Map(kv)])));
});

fuzz('proc-sections-mutated', textLike(sectionsArb.map(sectionsText)), (text) => {
  const r = timed('parseSectionPairs', () => parseSectionPairs(text, 'netstat'));
  assert.ok(r.issues.length <= MAX_ISSUES, `${r.issues.length} issues`);
  allFinite(r.value);
});

const snmp6Arb = fc.uniqueArray(fc.tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,20}$/), counter), { maxLength: 10, selector: (x) => x[0] });
const snmp6Text = (kv: [string, number][]): string => kv.map(([k, v]) => `${k.padEnd(32)}\t${v}\n`).join('');

fuzz('proc-snmp6-roundtrip', snmp6Arb, (kv) => {
  const r = timed('parseNameValueLines', () => parseNameValueLines(snmp6Text(kv), 'snmp6'));
  assert.deepEqual(r.issues, kv.length ? [] : ['snmp6: empty file']);
  assert.deepEqual(r.value, new Map(kv));
});

fuzz('proc-snmp6-mutated', textLike(snmp6Arb.map(snmp6Text)), (text) => {
  const r = timed('parseNameValueLines', () => parseNameValueLines(text, 'snmp6'));
  assert.ok(r.issues.length <= MAX_ISSUES, `${r.issues.length} issues`);
  allFinite(r.value);
});

// ---- socket tables -----------------------------------------------------------------------------

const hex = (n: number, w: number): string => n.toString(16).toUpperCase().padStart(w, '0');
const socketArb = fc.record({
  six: fc.boolean(),
  local: fc.nat({ max: 0xffffffff }),
  lport: fc.nat({ max: 0xffff }),
  remote: fc.oneof(fc.constant(0), fc.nat({ max: 0xffffffff })),
  rport: fc.oneof(fc.constant(0), fc.nat({ max: 0xffff })),
  state: fc.integer({ min: 1, max: TCP_STATES.length - 1 }),
});
type Socket = typeof socketArb extends fc.Arbitrary<infer T> ? T : never;
const addr = (six: boolean, a: number): string => (six ? `0000000000000000${hex(a, 8)}00000000` : hex(a, 8));
const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n';
const tableText = (ss: Socket[]): string =>
  HEADER + ss.map((s, i) => `${String(i).padStart(4)}: ${addr(s.six, s.local)}:${hex(s.lport, 4)} ${addr(s.six, s.remote)}:${hex(s.rport, 4)} ${hex(s.state, 2)} 00000000:00000000 00:00000000 00000000     0        0 ${1000 + i} 1 0000000000000000 100 0 0 10 0\n`).join('');

fuzz('proc-sockets-roundtrip', fc.array(socketArb, { maxLength: 12 }), (ss) => {
  const r = timed('parseSocketTable', () => parseSocketTable(tableText(ss), 'tcp'));
  assert.deepEqual(r.issues, []);
  const byState = new Array<number>(TCP_STATES.length).fill(0);
  for (const s of ss) byState[s.state] = (byState[s.state] as number) + 1;
  assert.deepEqual(r.value, { byState, total: ss.length, withRemote: ss.filter((s) => s.remote !== 0 || s.rport !== 0).length });
});

fuzz('proc-sockets-mutated', textLike(fc.array(socketArb, { maxLength: 6 }).map(tableText)), (text) => {
  const r = timed('parseSocketTable', () => parseSocketTable(text, 'tcp'));
  assert.ok(r.issues.length <= MAX_ISSUES, `${r.issues.length} issues`);
  const { byState, total, withRemote } = r.value;
  assert.equal(byState.reduce((a, b) => a + b, 0), total);
  assert.ok(withRemote <= total && total <= text.split('\n').length, 'more sockets than lines');
});

// ---- sysfs counters ----------------------------------------------------------------------------

fuzz('sysfs-uint', fc.oneof(fc.maxSafeNat().map((n) => `${n}\n`), anyText(40), fc.stringMatching(/^\s*\d{1,400}\s*$/)), (text) => {
  const r = timed('parseSysfsUint', () => onlyThrows([SysfsValueError], () => parseSysfsUint(text)));
  if (r.ok) assert.ok(Number.isFinite(r.value) && r.value >= 0, `${text.trim().slice(0, 40)} gave ${r.value}`);
  else assert.ok(r.error.message.length < 100, 'the error message quotes too much of the file');
  if (/^\d+$/.test(text.trim()) && text.trim().length < 16) assert.equal(r.ok && r.value, Number(text.trim()));
});
