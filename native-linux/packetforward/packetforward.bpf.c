// SPDX-License-Identifier: GPL-2.0
/* packetforward: packets and bytes entering and leaving the node through its external interfaces.
 *
 * Hook: tc clsact ingress + egress (SEC "tc") on each external interface only (default-route
 * interfaces, or the configured list). Why tc and not Retina's AF_PACKET socket filter on every
 * interface: the socket filter sees pod veths as well as eth0, so a pod's packet is counted twice;
 * tc on the external interfaces sees each node packet exactly once, and counts what the interface's
 * own rx/tx counters count. The program never changes the verdict (TC_ACT_UNSPEC). */
#include "retina.h"

struct fwd_value {
	__u64 packets;
	__u64 bytes;
};

/* Key 0: ingress, key 1: egress. Per CPU, summed by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fwd_value);
} retina_packetforward_metrics SEC(".maps");

static __always_inline int count(struct __sk_buff *skb, __u32 key)
{
	struct fwd_value *v = bpf_map_lookup_elem(&retina_packetforward_metrics, &key);
	if (v) {
		v->packets += 1;
		v->bytes += RETINA_SKB(skb, len);
	}
	return -1; /* TC_ACT_UNSPEC: let the next filter or the default action decide */
}

SEC("tc")
int packetforward_ingress(struct __sk_buff *skb)
{
	return count(skb, 0);
}

SEC("tc")
int packetforward_egress(struct __sk_buff *skb)
{
	return count(skb, 1);
}

char LICENSE[] SEC("license") = "GPL";
