import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tracepointArgTypes } from './btf.js';
import { dropreasonHookFor, dropreasonHooks } from './hooks.js';

// btf_trace_kfree_skb's arguments after the context pointer, as the kernels' BTF gives them
// (include/trace/events/skb.h): 5.15 (AKS Ubuntu 22.04, Azure Linux 2) TP_PROTO(struct sk_buff *skb,
// void *location); 5.17+ adds enum skb_drop_reason reason; 6.11+ also struct sock *rx_sk.
const V5_15 = ['struct sk_buff *', 'void *'];
const V6_6 = ['struct sk_buff *', 'void *', 'enum skb_drop_reason'];
const V6_11 = ['struct sk_buff *', 'void *', 'enum skb_drop_reason', 'struct sock *'];

test('dropreason: kfree_skb without a reason argument (5.15) gets the no-reason program', () => {
  assert.deepEqual([dropreasonHookFor(V5_15, false).program, dropreasonHookFor(V5_15, false).source], ['dropreason_kfree_skb_noreason', 'noreason']);
});

test('dropreason: with the reason argument (5.17+, 6.11+ with rx_sk) the reason program, unless forced to the fallback', () => {
  for (const args of [V6_6, V6_11]) {
    assert.equal(dropreasonHookFor(args, false).program, 'dropreason_kfree_skb');
    assert.equal(dropreasonHookFor(args, true).program, 'dropreason_kfree_skb_noreason');
  }
});

test('dropreason: a third argument of another type is not taken for the reason; an unexpected prototype is refused', () => {
  assert.equal(dropreasonHookFor(['struct sk_buff *', 'void *', 'int'], false).source, 'noreason');
  assert.throws(() => dropreasonHookFor(['void *'], false), /tp_btf\/kfree_skb passes \(void \*\) here/);
});

test("this kernel's BTF: kfree_skb's prototype read by type, and the choice made from it", () => {
  const args = tracepointArgTypes('kfree_skb');
  assert.ok(args, 'the kernel has btf_trace_kfree_skb');
  assert.deepEqual(args.slice(0, 2), ['struct sk_buff *', 'void *']);
  const has = args[2] === 'enum skb_drop_reason';
  assert.equal(dropreasonHooks()[0]?.source, has ? 'reason' : 'noreason');
  assert.equal(dropreasonHooks({ forceNoReason: true })[0]?.source, 'noreason');
  assert.equal(tracepointArgTypes('rtbpf_no_such_event'), undefined);
});
