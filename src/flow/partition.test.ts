/**
 * partition(): records are routed to workers by a hash of their peers' addresses, so the hash must
 * spread the addresses a cluster really has (every pod in one /16 or one /64) evenly over any
 * number of workers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyHash, partition, partitionOf } from './partition.js';

/** 32-byte keys as packetparser's records hold their peers: saddr[16], daddr[16] (IPv4 in the first 4 bytes). */
function keys(pairs: number, v6: boolean): DataView {
  const v = new DataView(new ArrayBuffer(pairs * 32));
  const put = (at: number, host: number): void => {
    if (v6) {
      v.setUint32(at, 0xfd000000, false); // fd00::/64 (the rest of the prefix zero)
      v.setUint32(at + 12, host, false);
    } else {
      v.setUint32(at, (10 << 24) | (244 << 16) | host, false); // 10.244.0.0/16, network order
    }
  };
  for (let i = 0; i < pairs; i++) {
    // 3 000 distinct pairs of about 600 pods (each pod in several pairs, as a node's connections are)
    const src = 1 + (i % 577);
    const dst = 1 + ((13 * (i % 577) + 398 * Math.floor(i / 577)) % 600);
    put(i * 32, (Math.floor(src / 250) << 8) | (src % 250));
    put(i * 32 + 16, (Math.floor(dst / 250) << 8) | (dst % 250));
  }
  return v;
}

describe('partition: records to workers by their peers', () => {
  for (const v6 of [false, true]) {
    for (const n of [2, 3, 4, 8]) {
      it(`${v6 ? 'IPv6 peers in one /64' : 'IPv4 peers in one /16'}: 3 000 pairs over ${n} workers, each within 15 % of an even share`, () => {
        const pairs = 3000;
        const v = keys(pairs, v6);
        const got = new Array<number>(n).fill(0);
        for (let i = 0; i < pairs; i++) {
          const w = partition(v, i * 32, 32, n);
          assert.ok(Number.isInteger(w) && w >= 0 && w < n, `worker ${w}`);
          got[w] = (got[w] ?? 0) + 1;
        }
        const even = pairs / n;
        assert.ok(got.every((c) => Math.abs(c - even) <= 0.15 * even), `per worker: ${got.join(', ')}`);
      });
    }
  }

  for (const v6 of [false, true]) {
    it(`${v6 ? 'IPv6' : 'IPv4'}: packetparser's key, the kernel's 4-byte hash of the pair (peer_hash), spreads as evenly over 2, 3 and 4 workers`, () => {
      const pairs = 3000;
      const v = keys(pairs, v6);
      const hashes = new DataView(new ArrayBuffer(pairs * 4));
      for (let i = 0; i < pairs; i++) hashes.setUint32(i * 4, keyHash(v, i * 32, 32), true);
      for (const n of [2, 3, 4]) {
        const got = new Array<number>(n).fill(0);
        for (let i = 0; i < pairs; i++) got[partition(hashes, i * 4, 4, n)]! += 1;
        assert.ok(got.every((c) => Math.abs(c - pairs / n) <= 0.15 * (pairs / n)), `${n} workers: ${got.join(', ')}`);
        // taken as it is (packetparser's key is `hashed`): the kernel's hash spreads as evenly unhashed again
        const raw = new Array<number>(n).fill(0);
        for (let i = 0; i < pairs; i++) raw[partitionOf(hashes, i * 4, 4, { offset: 0, length: 4, hashed: true }, n)]! += 1;
        assert.ok(raw.every((c) => Math.abs(c - pairs / n) <= 0.15 * (pairs / n)), `${n} workers, hashed key: ${raw.join(', ')}`);
      }
    });
  }

  it('partitionOf: a key hashed here unless it says it is a hash already; a record too short for its key is partition 0\'s', () => {
    const v = keys(50, false);
    for (let i = 0; i < 50; i++) {
      assert.equal(partitionOf(v, i * 32, 32, { offset: 8, length: 16 }, 3), partition(v, i * 32 + 8, 16, 3));
      assert.equal(partitionOf(v, i * 32, 32, { offset: 4, length: 4, hashed: true }, 4), ((v.getUint32(i * 32 + 4, true) & 0xffff) * 4) >>> 16);
      assert.equal(partitionOf(v, i * 32, 7, { offset: 4, length: 4, hashed: true }, 4), 0);
    }
  });

  it('the same peers always go to the same worker', () => {
    const v = keys(10, false);
    const again = new DataView(v.buffer.slice(0));
    for (let i = 0; i < 10; i++) assert.equal(partition(v, i * 32, 32, 4), partition(again, i * 32, 32, 4));
  });
});
