/**
 * Fuzzing what the platform layer reads from the host (src/platform): CapEff in /proc/self/status,
 * the btf_trace_* names in /sys/kernel/btf/vmlinux, and the kernel release. Round trips through
 * writers of those formats; random inputs never throw.
 */
import assert from 'node:assert/strict';
import { effectiveCapabilities, tracepointsInBtf } from '../../src/platform/linux/detect.js';
import { parseKernelVersion } from '../../src/platform/capabilities.js';
import { bytes, fc, fuzzer, onlyThrows, timed } from './harness.js';

const fuzz = fuzzer(import.meta.url);

const NAMED: Readonly<Record<number, string>> = { 12: 'CAP_NET_ADMIN', 13: 'CAP_NET_RAW', 21: 'CAP_SYS_ADMIN', 38: 'CAP_PERFMON', 39: 'CAP_BPF' };

fuzz('host-capeff-roundtrip', fc.tuple(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.string({ maxLength: 30 }).map((s) => s.replace(/CapEff/g, ''))), ([bits, noise]) => {
  const text = `Name:\tnode\n${noise}\nCapPrm:\t0000000000000000\nCapEff:\t${bits.toString(16).padStart(16, '0')}\nCapBnd:\t000001ffffffffff\n`;
  const caps = timed('effectiveCapabilities', () => effectiveCapabilities(text));
  for (const [bit, name] of Object.entries(NAMED)) assert.equal(caps.includes(name), ((bits >> BigInt(bit)) & 1n) === 1n, name);
});

fuzz('host-capeff-random', fc.string({ maxLength: 120 }), (text) => {
  const r = timed('effectiveCapabilities', () => onlyThrows([], () => effectiveCapabilities(`CapEff:\t${text}`)));
  assert.ok(r.ok);
});

/** Identifier-like names, and junk between the entries that holds no marker. */
const tpName = fc.stringMatching(/^[a-z_][a-z0-9_]{0,20}$/);
fuzz('host-btf-tracepoints', fc.tuple(fc.uniqueArray(tpName, { maxLength: 6 }), fc.array(bytes(12).map((b) => Buffer.from(b.map((x) => (x === 0 ? 1 : x)))), { maxLength: 6 })), ([names, junk]) => {
  const parts: Buffer[] = [Buffer.from([0x9f, 0xeb, 1, 0])];
  names.forEach((n, i) => parts.push(Buffer.from(`\0btf_trace_${n}`), junk[i] ? Buffer.concat([Buffer.from([0]), junk[i] as Buffer]) : Buffer.alloc(0)));
  parts.push(Buffer.from([0]));
  const got = timed('tracepointsInBtf', () => tracepointsInBtf(Buffer.concat(parts)));
  assert.deepEqual(got, new Set(names));
});

fuzz('host-btf-random', bytes(300), (b) => {
  const got = timed('tracepointsInBtf', () => tracepointsInBtf(Buffer.from(b)));
  assert.ok(got.size <= b.length / 11);
});

fuzz('host-kernel-release', fc.tuple(fc.nat(99), fc.nat(999), fc.nat(999), fc.string({ maxLength: 20 })), ([a, b, c, tail]) => {
  const t = /^[.\d]/.test(tail) ? `-${tail}` : tail;
  assert.deepEqual(parseKernelVersion(`${a}.${b}.${c}${t}`), [a, b, c]);
  assert.deepEqual(parseKernelVersion(`${a}.${b}${/^[.\d]/.test(t) ? '' : t}`), [a, b, 0]);
  for (const v of parseKernelVersion(tail)) assert.ok(Number.isFinite(v) || tail.length > 300);
});
