import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countLinkMessages } from './link-events.js';

/** A netlink message of `type` with `payload` bytes after its 16-byte header. */
function msg(type: number, payload: number): Uint8Array {
  const b = new Uint8Array(16 + payload);
  const v = new DataView(b.buffer);
  v.setUint32(0, b.length, true);
  v.setUint16(4, type, true);
  return b;
}

describe('link events', () => {
  it('counts the RTM_NEWLINK and RTM_DELLINK messages of a read, skipping others and stopping at a broken header', () => {
    const parts = [msg(16, 30), msg(17, 16), msg(20, 8), msg(16, 0)]; // NEWLINK (padded to 48), DELLINK, NEWADDR, NEWLINK
    const padded = parts.map((p) => { const q = new Uint8Array((p.length + 3) & ~3); q.set(p); return q; });
    const all = new Uint8Array(padded.reduce((n, p) => n + p.length, 0) + 16);
    let off = 0;
    for (const p of padded) { all.set(p, off); off += p.length; }
    const v = new DataView(all.buffer);
    assert.equal(countLinkMessages(v, off), 3);
    // A header claiming fewer than 16 bytes ends the walk instead of looping.
    assert.equal(countLinkMessages(v, all.length), 3);
  });
});
