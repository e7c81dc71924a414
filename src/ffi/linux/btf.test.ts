import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { VMLINUX_BTF_KEEP_MS, kernelEnum, releaseVmlinuxBtf, withVmlinuxBtf } from './btf.js';

describe('withVmlinuxBtf', () => {
  it('parses the kernel\'s BTF once for calls within VMLINUX_BTF_KEEP_MS of each other, and again after it was freed', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      releaseVmlinuxBtf();
      const seen: unknown[] = [];
      withVmlinuxBtf((_l, btf) => seen.push(btf));
      mock.timers.tick(VMLINUX_BTF_KEEP_MS - 1);
      withVmlinuxBtf((_l, btf) => seen.push(btf));
      // nested (a helper calling another): the same BTF
      withVmlinuxBtf(() => withVmlinuxBtf((_l, btf) => seen.push(btf)));
      assert.equal(seen[1], seen[0], 'kept between calls');
      assert.equal(seen[2], seen[0], 'kept for a nested call');
      mock.timers.tick(VMLINUX_BTF_KEEP_MS);
      withVmlinuxBtf((_l, btf) => seen.push(btf));
      assert.notEqual(seen[3], seen[0], 'freed once idle, parsed again');
      // what the kept BTF answers is what a fresh one answers
      const kept = kernelEnum('skb_drop_reason');
      releaseVmlinuxBtf();
      assert.deepEqual(kernelEnum('skb_drop_reason'), kept);
      assert.ok((kept?.size ?? 0) > 10, 'the kernel names its drop reasons');
    } finally {
      releaseVmlinuxBtf();
      mock.timers.reset();
    }
  });

  it('an error in the callback still leaves the BTF to be freed', () => {
    releaseVmlinuxBtf();
    assert.throws(() => withVmlinuxBtf(() => { throw new Error('boom'); }), /boom/);
    let again: unknown;
    withVmlinuxBtf((_l, btf) => (again = btf));
    assert.ok(again);
    releaseVmlinuxBtf();
  });
});
