import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openEthtool } from './ethtool.js';

// Runs on the real kernel (Linux only); the full check against `ethtool -S` on a veth is in
// test/linux/linuxutil.test.ts.
describe('ethtool client', () => {
  it('answers EOPNOTSUPP for lo, ENODEV for a missing interface, EINVAL for a bad name, and closes twice safely', () => {
    const c = openEthtool();
    try {
      assert.deepEqual(c.stats('lo'), { ok: false, errno: 95, code: 'EOPNOTSUPP', op: 'GSSET_INFO' });
      assert.deepEqual(c.stats('rtlu-nope0'), { ok: false, errno: 19, code: 'ENODEV', op: 'GSSET_INFO' });
      assert.deepEqual(c.stats('a-name-longer-than-15'), { ok: false, errno: 22, code: 'EINVAL', op: 'ifname' });
    } finally {
      c[Symbol.dispose]();
      c[Symbol.dispose]();
    }
    assert.equal(c.stats('lo').ok, false, 'a closed client answers, it does not throw');
  });
});
