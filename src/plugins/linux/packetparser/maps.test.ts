import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MapWriter } from '../../../ffi/linux/index.js';
import { AGG_KEY_SIZE, budgetValue, foldAboveBytes } from './budget.js';
import { CT_KEY_SIZE, SWEEP_KEYS_PER_RUN, SWEEP_RESULT_SIZE, addSweepResults, decodeSweepResult, ipKey, sweepInput, sweepKeysInput, syncFilter } from './maps.js';

test('filter keys: IPv4 v4-mapped, IPv6 as is, zones dropped, junk refused', () => {
  assert.equal(ipKey('10.0.0.1')?.toString('hex'), '00000000000000000000ffff0a000001');
  assert.equal(ipKey('fd00::1')?.toString('hex'), 'fd000000000000000000000000000001');
  assert.equal(ipKey('2001:db8:0:1::')?.toString('hex'), '20010db8000000010000000000000000');
  assert.equal(ipKey('::ffff:192.0.2.1')?.toString('hex'), '00000000000000000000ffffc0000201');
  assert.equal(ipKey('fe80::1%eth0')?.toString('hex'), 'fe800000000000000000000000000001');
  assert.equal(ipKey('1:2:3:4:5:6:7:8')?.toString('hex'), '00010002000300040005000600070008');
  assert.equal(ipKey('nope'), undefined);
  assert.equal(ipKey('10.0.0.256'), undefined);
});

function fakeMap(): MapWriter & { keys: Set<string>; ops: string[] } {
  const keys = new Set<string>();
  const ops: string[] = [];
  return {
    keys, ops,
    put: (k) => void (keys.add(Buffer.from(k).toString('hex')), ops.push('put')),
    delete: (k) => (ops.push('delete'), keys.delete(Buffer.from(k).toString('hex'))),
  };
}

test('syncFilter adds what is new, deletes what went, touches nothing else, and caps at the map size', () => {
  const m = fakeMap();
  const current = new Map<string, Buffer>();
  assert.deepEqual(syncFilter(m, current, new Set(['10.0.0.1', '10.0.0.2', 'junk']), 8), { added: 2, removed: 0, overflow: 0, invalid: 1 });
  m.ops.length = 0;
  assert.deepEqual(syncFilter(m, current, new Set(['10.0.0.2', 'fd00::2']), 8), { added: 1, removed: 1, overflow: 0, invalid: 0 });
  assert.deepEqual(m.ops.sort(), ['delete', 'put']);
  assert.deepEqual([...m.keys].sort(), [ipKey('10.0.0.2')?.toString('hex'), ipKey('fd00::2')?.toString('hex')].sort());
  const many = new Set(Array.from({ length: 10 }, (_, i) => `10.1.0.${i}`));
  assert.deepEqual(syncFilter(m, current, many, 4), { added: 4, removed: 2, overflow: 6, invalid: 0 });
  assert.equal(m.keys.size, 4);
});

test('decodeSweepResult reads struct pp_sweep_result (u64 totals above 2^32, u32 counts)', () => {
  const b = Buffer.alloc(SWEEP_RESULT_SIZE);
  b.writeBigUInt64LE(5_000_000_000_000n, 0);
  b.writeBigUInt64LE(3n, 8);
  b.writeBigUInt64LE(7n, 16);
  b.writeBigUInt64LE(2n ** 40n, 24);
  [2, 1, 9, 4].forEach((n, i) => b.writeUInt32LE(n, 32 + i * 4));
  assert.deepEqual(decodeSweepResult(b), { packetsTx: 5_000_000_000_000, packetsRx: 3, bytesTx: 7, bytesRx: 2 ** 40, live: 2, expired: 1, reported: 9, lost: 4 });
  assert.throws(() => decodeSweepResult(Buffer.alloc(40)), /40 bytes, expected 48/);
});

test('sweepInput: 14 bytes (tc test runs need an Ethernet header), the first byte says final, the second the CPU budget\'s aggregates only', () => {
  assert.deepEqual([...sweepInput(false)], new Array(14).fill(0));
  assert.equal(sweepInput(true)[0], 1);
  assert.deepEqual([...sweepInput(false, true).subarray(0, 2)], [0, 1]);
  assert.deepEqual([...sweepInput(true, true).subarray(0, 2)], [1, 1]);
});

test('sweepKeysInput: final, the count, padding, then the keys back to back; at least 14 bytes; at most SWEEP_KEYS_PER_RUN keys', () => {
  const k1 = new Uint8Array(CT_KEY_SIZE).fill(1);
  const k2 = new Uint8Array(CT_KEY_SIZE).fill(2);
  const b = sweepKeysInput(true, [k1, k2]);
  assert.equal(b.length, 4 + 2 * CT_KEY_SIZE);
  assert.deepEqual([...b.subarray(0, 4)], [1, 2, 0, 0]);
  assert.deepEqual([...b.subarray(4, 4 + CT_KEY_SIZE)], [...k1]);
  assert.deepEqual([...b.subarray(4 + CT_KEY_SIZE)], [...k2]);
  assert.deepEqual([...sweepKeysInput(false, [])], new Array(14).fill(0));
  assert.throws(() => sweepKeysInput(false, new Array(SWEEP_KEYS_PER_RUN + 1).fill(k1)), /at most 32/);
  // The CPU budget's aggregate keys (the same size) are flagged in the third byte.
  assert.deepEqual([...sweepKeysInput(false, [k1], true).subarray(0, 4)], [0, 1, 1, 0]);
  assert.equal(AGG_KEY_SIZE, CT_KEY_SIZE);
});

test('budgetValue: the rate and a tenth of a second\'s burst (at least 4); 0 is no limit', () => {
  const v = (limit: number): [bigint, bigint] => {
    const b = budgetValue(limit);
    return [b.readBigUInt64LE(0), b.readBigUInt64LE(8)];
  };
  assert.deepEqual(v(0), [0n, 0n]);
  assert.deepEqual(v(20), [20n, 4n]);
  assert.deepEqual(v(12_345), [12_345n, 1235n]);
  assert.equal(foldAboveBytes(8_388_608), 6_291_456);
});

test('addSweepResults: every field summed', () => {
  const r = { packetsTx: 1, packetsRx: 2, bytesTx: 3, bytesRx: 4, live: 5, expired: 6, reported: 7, lost: 8 };
  assert.deepEqual(addSweepResults(r, r), { packetsTx: 2, packetsRx: 4, bytesTx: 6, bytesRx: 8, live: 10, expired: 12, reported: 14, lost: 16 });
});
