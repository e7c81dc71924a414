import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelHasFunc, tracepointArgTypes } from './btf.js';
import { dropreasonHookFor, dropreasonHooks, packetparserHooks, packetparserHooksFor } from './hooks.js';

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

test('packetparser: the *_ct variants (Service translation) when the kernel has the conntrack kfuncs, the plain ones otherwise', () => {
  const names = (h: ReturnType<typeof packetparserHooksFor>): string[] => [...h.endpoint, ...h.host].map((c) => c.program);
  assert.deepEqual(names(packetparserHooksFor(true)), ['packetparser_endpoint_ingress_ct', 'packetparser_endpoint_egress_ct', 'packetparser_host_ingress_ct', 'packetparser_host_egress_ct']);
  assert.deepEqual(names(packetparserHooksFor(false)), ['packetparser_endpoint_ingress', 'packetparser_endpoint_egress', 'packetparser_host_ingress', 'packetparser_host_egress']);
  assert.deepEqual(packetparserHooksFor(true).endpoint.map((c) => c.target), ['ingress', 'egress']);
  // this kernel (6.18, nf_conntrack built in): vmlinux has the kfuncs; a name that is no function is not found
  const has = kernelHasFunc('bpf_skb_ct_lookup', 'nf_conntrack');
  assert.equal(packetparserHooks().translate, has && kernelHasFunc('bpf_ct_release', 'nf_conntrack'));
  assert.equal(kernelHasFunc('rtbpf_no_such_kfunc', 'rtbpf_no_such_module'), false);
  assert.equal(packetparserHooks({ translate: false }).translate, false);
});

test('packetparser: the sweep walks the table in the kernel where bpf_for_each_map_elem exists (5.13+), sweeps listed keys before', () => {
  assert.equal(packetparserHooksFor(false).sweep, 'packetparser_sweep');
  assert.equal(packetparserHooksFor(true, true).sweep, 'packetparser_sweep_keys');
  // this kernel (6.18) has the helper: libbpf's probe says so; forced either way by keyedSweep
  assert.equal(packetparserHooks().sweep, 'packetparser_sweep');
  assert.equal(packetparserHooks({ keyedSweep: true }).sweep, 'packetparser_sweep_keys');
});
