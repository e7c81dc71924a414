// SPDX-License-Identifier: GPL-2.0
/* tcpretrans: TCP retransmissions on the node.
 *
 * Hook: tp_btf/tcp_retransmit_skb (BTF-typed raw tracepoint; the tcp:tcp_retransmit_skb event Retina
 * uses, without tracefs). Kernels 6.12+ pass a fourth argument, err, and fire the tracepoint for
 * failed attempts too; on those the agent loads tcpretrans_tp_err, which counts only err == 0;
 * older kernels get tcpretrans_tp (the choice is made in src/ffi/linux/hooks.ts).
 *
 * Node counter, per CPU: retransmitted skbs and segments (tcp_gso_segs, as the kernel's
 * RetransSegs counts). With emit_events, one record per retransmission for the pod-level pipeline. */
#include "retina.h"
#include "retrans_event.h"

const volatile __u8 emit_events = 0;
const volatile __u32 wakeup_bytes = 0;

struct retrans_value {
	__u64 skbs;
	__u64 segs;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct retrans_value);
} retina_tcpretrans_metrics SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} retina_tcpretrans_events SEC(".maps");

RETINA_LOST_MAP(retina_tcpretrans_lost);

static __always_inline int on_retransmit(const struct sock *sk, const struct sk_buff *skb)
{
	struct tcp_skb_cb *cb = (struct tcp_skb_cb *)&skb->cb[0];
	__u32 segs = BPF_CORE_READ(cb, tcp_gso_segs);
	__u32 zero = 0;
	if (segs == 0)
		segs = 1;
	struct retrans_value *v = bpf_map_lookup_elem(&retina_tcpretrans_metrics, &zero);
	if (v) {
		v->skbs += 1;
		v->segs += segs;
	}
	if (!emit_events)
		return 0;
	struct retrans_event *e = bpf_ringbuf_reserve(&retina_tcpretrans_events, sizeof(*e), 0);
	if (!e) {
		retina_count_lost(&retina_tcpretrans_lost);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_boot_ns();
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family == AF_INET_) {
		e->family = 4;
		__u32 s = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		__builtin_memcpy(e->saddr, &s, 4);
		__builtin_memcpy(e->daddr, &d, 4);
	} else {
		e->family = 6;
		BPF_CORE_READ_INTO(&e->saddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&e->daddr, sk, __sk_common.skc_v6_daddr);
	}
	e->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	e->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	e->tcp_flags = (__u8)BPF_CORE_READ(cb, tcp_flags);
	e->segs = segs;
	e->len = BPF_CORE_READ(skb, len);
	bpf_ringbuf_submit(e, retina_submit_flags(&retina_tcpretrans_events, wakeup_bytes));
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcpretrans_tp_err, const struct sock *sk, const struct sk_buff *skb, int err)
{
	if (err)
		return 0;
	return on_retransmit(sk, skb);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcpretrans_tp, const struct sock *sk, const struct sk_buff *skb)
{
	return on_retransmit(sk, skb);
}

char LICENSE[] SEC("license") = "GPL";
