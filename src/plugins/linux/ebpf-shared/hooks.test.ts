import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errnoError } from '../../../ffi/linux/libbpf.js';
import { silentLogger } from '../../../log/index.js';
import { PermanentError, isPermanent } from '../../../plugin/index.js';
import { onHook } from './hooks.js';

/** What onHook throws when `fn` throws `e`. */
function thrown(e: unknown): unknown {
  try {
    onHook(silentLogger, 'tc/packetforward', () => {
      throw e;
    });
  } catch (x) {
    return x;
  }
  assert.fail('onHook did not throw');
}

describe('onHook: which hook failures are permanent', () => {
  for (const [name, errno] of [['EAGAIN', 11], ['ENOMEM', 12], ['EBUSY', 16]] as const) {
    it(`${name} from the kernel is retryable (not a PermanentError), and keeps the errno in its cause`, () => {
      const e = errnoError('cannot attach packetforward_ingress to tc ingress of ifindex 3', errno);
      assert.equal(e.code, name);
      assert.match(e.message, new RegExp(`: ${name} \\(${errno}\\)$`));
      const x = thrown(e);
      assert.ok(x instanceof Error && !(x instanceof PermanentError), String(x));
      assert.equal(isPermanent(x), false);
      assert.equal(x.cause, e);
      // Wrapped once more, as packetparser's attach does: still retryable.
      assert.equal(isPermanent(thrown(new Error('veth lxc1', { cause: e }))), false);
    });
  }

  it('a missing hook (ENOENT, EINVAL, no errno at all) is permanent', () => {
    for (const e of [errnoError('the kernel has no kfree_skb to attach dropreason to', 2), errnoError('cannot load BPF object dns', 22), new Error('no dropreason hook chosen')]) {
      const x = thrown(e);
      assert.ok(x instanceof PermanentError, String(x));
      assert.equal(isPermanent(x), true);
    }
  });

  it('the manager\'s rule: a PermanentError that wraps EBUSY is still retried', () => {
    assert.equal(isPermanent(new PermanentError('hook tc', { cause: errnoError('cannot create clsact qdisc on ifindex 4', 16) })), false);
    assert.equal(isPermanent(new PermanentError('hook tc', { cause: errnoError('cannot create clsact qdisc on ifindex 4', 95) })), true);
  });
});
