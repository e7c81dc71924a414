/**
 * Fuzzing the watch-stream line splitter (src/k8s/lines.ts): the API server's bytes arrive in chunks
 * cut anywhere (inside a multi-byte character, between \r and \n). Whatever the cuts, the lines are
 * those of the whole text (a trailing \r dropped, blank lines skipped), and a line longer than the cap
 * ends the stream with ResponseTooLargeError after the lines before it, never holding more than the cap.
 */
import assert from 'node:assert/strict';
import { splitLines } from '../../src/k8s/lines.js';
import { ResponseTooLargeError } from '../../src/k8s/rest-errors.js';
import { fc, fuzzer } from './harness.js';

const fuzz = fuzzer(import.meta.url);

const lineArb = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 30 }).map((s) => s.replace(/\n/g, '')),
  fc.constantFrom('', ' ', '\r', '{"type":"ADDED","object":{"kind":"Pod"}}\r', 'é€😀'),
);
const streamArb = fc.record({
  lines: fc.array(lineArb, { maxLength: 8 }),
  finalNewline: fc.boolean(),
  cuts: fc.array(fc.nat(), { maxLength: 6 }),
  cap: fc.integer({ min: 1, max: 64 }),
});

fuzz('k8s-watch-lines', streamArb, async ({ lines, finalNewline, cuts, cap }) => {
  const text = Buffer.from(lines.join('\n') + (finalNewline && lines.length ? '\n' : ''));
  const at = [...new Set(cuts.map((c) => (text.length ? c % text.length : 0)))].sort((a, b) => a - b);
  const chunks = [0, ...at].map((s, i, all) => text.subarray(s, all[i + 1] ?? text.length)).filter((c) => c.length > 0);
  async function* input(): AsyncGenerator<Buffer> {
    for (const c of chunks) yield Buffer.from(c);
  }
  const got: string[] = [];
  let error: unknown;
  try {
    for await (const l of splitLines(input(), cap, 'GET /w')) got.push(l);
  } catch (e) {
    error = e;
  }
  // The oracle: the whole text's lines, up to the first one over the cap.
  const whole = text.toString('utf8').split('\n');
  if (finalNewline && lines.length) whole.pop();
  const want: string[] = [];
  let tooLong = false;
  for (const l of whole) {
    if (Buffer.byteLength(l) > cap) {
      tooLong = true;
      break;
    }
    const s = l.endsWith('\r') ? l.slice(0, -1) : l;
    if (s.trim() !== '') want.push(s);
  }
  assert.deepEqual(got, want);
  if (tooLong) assert.ok(error instanceof ResponseTooLargeError, `expected ResponseTooLargeError, got ${String(error)}`);
  else assert.equal(error, undefined);
});
