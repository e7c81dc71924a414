// SPDX-License-Identifier: GPL-2.0
/* dropreason: packets the kernel drops, by the kernel's own reason (enum skb_drop_reason).
 *
 * Hook: tp_btf/kfree_skb (BTF-typed raw tracepoint, no tracefs, no kprobes). Every drop in the
 * stack ends in kfree_skb_reason() with a reason; normal frees go through consume_skb (tracepoint
 * consume_skb) or carry SKB_CONSUMED, so they are not counted. This replaces Retina's kprobes on
 * nf_hook_slow & co. (unavailable here), and names every drop, not only netfilter's.
 *
 * Kernels before 5.17 (AKS Ubuntu 22.04 and Azure Linux 2: 5.15) have kfree_skb(skb, location)
 * without a reason. There the agent loads dropreason_kfree_skb_noreason instead (chosen from the
 * BTF of the tracepoint's prototype, src/ffi/linux/hooks.ts): every kfree_skb counts, as
 * NETFILTER_DROP when `location` (the caller's return address) lies in a function whose frees are
 * netfilter DROP verdicts: nf_hook_slow (every kernel; the only one before 6.x) or nft_do_chain
 * (newer kernels free nftables drops there, NF_DROP_REASON), and as NOT_SPECIFIED otherwise. The
 * agent reads their bounds from /proc/kallsyms into nf_fn{0,1}_{start,end} (0: unknown).
 *
 * Aggregated in the kernel per CPU by (reason, direction). Direction: an skb that entered through
 * an interface has skb_iif set (ingress); one built locally has not (egress). With emit_events
 * (pod-level metrics), each drop is also sent as a record to the ring buffer. */
#include "retina.h"
#include "flowaddr.h"

const volatile __u8 emit_events = 0;
const volatile __u32 wakeup_bytes = 0;
/* The no-reason variant: two netfilter functions' address ranges (start, end], from /proc/kallsyms. */
const volatile __u64 nf_fn0_start = 0;
const volatile __u64 nf_fn0_end = 0;
const volatile __u64 nf_fn1_start = 0;
const volatile __u64 nf_fn1_end = 0;

/* The values of the kernel's SKB_NOT_DROPPED_YET and SKB_CONSUMED (not drops), set by the agent from
 * the kernel's enum: 0 and 1 on recent kernels; the first kernels with reasons lack them (5.17's enum
 * starts at NOT_SPECIFIED = 0), and there 0 and 1 are drops. */
const volatile __u32 not_a_drop_0 = 0;
const volatile __u32 not_a_drop_1 = 1;

/* The no-reason variant's own reason values; the agent names them (dropreason/decode.ts
 * FALLBACK_REASONS), whatever the kernel's enum says. */
#define RETINA_FALLBACK_NOT_SPECIFIED 2
#define RETINA_FALLBACK_NETFILTER_DROP 3

struct drop_key {
	__u32 reason;
	__u32 direction;
};

struct drop_value {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct drop_key);
	__type(value, struct drop_value);
} retina_dropreason_metrics SEC(".maps");

struct drop_event {
	__u64 ts_ns;
	__u32 reason;
	__u32 direction;
	__u32 len;
	__u32 ifindex;
	struct retina_tuple t;
};
RETINA_BTF_RECORD(drop_event);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} retina_dropreason_events SEC(".maps");

RETINA_LOST_MAP(retina_dropreason_lost);

static __always_inline int count_drop(struct sk_buff *skb, __u32 reason)
{
	struct drop_key key = {
		.reason = reason,
		.direction = skb->skb_iif ? RETINA_DIR_INGRESS : RETINA_DIR_EGRESS,
	};
	__u32 len = skb->len;
	struct drop_value *v = bpf_map_lookup_elem(&retina_dropreason_metrics, &key);
	if (!v) {
		struct drop_value zero = {};
		/* -EEXIST when a nested drop on this CPU created it first: then look it up again */
		bpf_map_update_elem(&retina_dropreason_metrics, &key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&retina_dropreason_metrics, &key);
	}
	if (v) {
		__sync_fetch_and_add(&v->packets, 1);
		__sync_fetch_and_add(&v->bytes, len);
	}
	if (!emit_events)
		return 0;
	struct drop_event *e = bpf_ringbuf_reserve(&retina_dropreason_events, sizeof(*e), 0);
	if (!e) {
		retina_count_lost(&retina_dropreason_lost);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_boot_ns();
	e->reason = key.reason;
	e->direction = key.direction;
	e->len = len;
	e->ifindex = skb->skb_iif;
	retina_skb_tuple(skb, &e->t);
	bpf_ringbuf_submit(e, retina_submit_flags(&retina_dropreason_events, wakeup_bytes));
	return 0;
}

/* Only the first three arguments: kernels from 5.17 have them, 6.11+ add rx_sk. */
SEC("tp_btf/kfree_skb")
int BPF_PROG(dropreason_kfree_skb, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	if ((__u32)reason == not_a_drop_0 || (__u32)reason == not_a_drop_1)
		return 0;
	return count_drop(skb, (__u32)reason);
}

/* Only the first two arguments, which every kernel with BTF has (before 5.17: all there is). */
SEC("tp_btf/kfree_skb")
int BPF_PROG(dropreason_kfree_skb_noreason, struct sk_buff *skb, void *location)
{
	__u64 at = (__u64)location;
	/* (start, end]: a call that is a function's last instruction returns to its end */
	int netfilter = (nf_fn0_start && at > nf_fn0_start && at <= nf_fn0_end) ||
		(nf_fn1_start && at > nf_fn1_start && at <= nf_fn1_end);
	return count_drop(skb, netfilter ? RETINA_FALLBACK_NETFILTER_DROP : RETINA_FALLBACK_NOT_SPECIFIED);
}

char LICENSE[] SEC("license") = "GPL";
