/** The soak's memory slope (bench/soak/trend.ts): least squares in units per minute, with its standard error. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { trend } from '../../bench/soak/trend.js';

test('a line\'s slope is found exactly, in units per minute, with no error', () => {
  const pts = Array.from({ length: 31 }, (_, i) => [i * 10_000, 100 + 0.5 * (i / 6)] as [number, number]);
  const t = trend(pts);
  assert.ok(Math.abs(t.slopePerMinute - 0.5) < 1e-9, `slope ${t.slopePerMinute}`);
  assert.ok(t.stdErrPerMinute < 1e-9);
  assert.equal(t.n, 31);
});

test('a flat sawtooth (a GC\'s rise and fall) has a slope near 0 and a standard error that says how near', () => {
  const pts = Array.from({ length: 180 }, (_, i) => [i * 10_000, 40 + (i % 6) * 2] as [number, number]);
  const t = trend(pts);
  assert.ok(Math.abs(t.slopePerMinute) < 0.05, `slope ${t.slopePerMinute}`);
  assert.ok(t.stdErrPerMinute > 0 && t.stdErrPerMinute < 0.05, `stderr ${t.stdErrPerMinute}`);
});

test('a leak under noise: 1 MB per 10 minutes shows through ±5 MB of sawtooth over 30 minutes', () => {
  const pts = Array.from({ length: 180 }, (_, i) => [i * 10_000, 60 + (i / 6) * 0.1 + ((i * 7) % 11) - 5] as [number, number]);
  const t = trend(pts);
  assert.ok(Math.abs(t.slopePerMinute - 0.1) < 0.05, `slope ${t.slopePerMinute}`);
});

test('one point, or points at one time, are refused', () => {
  assert.throws(() => trend([[0, 1]]), /two different times/);
  assert.throws(() => trend([[5, 1], [5, 2]]), /two different times/);
});
