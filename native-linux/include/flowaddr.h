/* Reads an skb's IP addresses and ports (best effort, from its network header) for flow records. */
#ifndef RETINA_FLOWADDR_H
#define RETINA_FLOWADDR_H
#include "retina.h"

struct retina_tuple {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport; /* host order */
	__u16 dport;
	__u8 family; /* 4 or 6, 0 unknown */
	__u8 proto;
	__u8 tcp_flags;
	__u8 pad;
};

static __always_inline void retina_skb_tuple(struct sk_buff *skb, struct retina_tuple *t)
{
	unsigned char *head = BPF_CORE_READ(skb, head);
	__u16 nh = BPF_CORE_READ(skb, network_header);
	__u16 proto = bpf_ntohs(BPF_CORE_READ(skb, protocol));
	__u32 l4 = 0;
	if (nh == (__u16)~0U || !head)
		return;
	if (proto == ETH_P_IP_) {
		struct iphdr ip;
		if (bpf_probe_read_kernel(&ip, sizeof(ip), head + nh))
			return;
		if (ip.version != 4)
			return;
		t->family = 4;
		t->proto = ip.protocol;
		__builtin_memcpy(t->saddr, &ip.saddr, 4);
		__builtin_memcpy(t->daddr, &ip.daddr, 4);
		if (ip.frag_off & bpf_htons(0x1fff))
			return;
		l4 = nh + ip.ihl * 4;
	} else if (proto == ETH_P_IPV6_) {
		struct ipv6hdr ip6;
		if (bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh))
			return;
		t->family = 6;
		t->proto = ip6.nexthdr;
		__builtin_memcpy(t->saddr, &ip6.saddr, 16);
		__builtin_memcpy(t->daddr, &ip6.daddr, 16);
		l4 = nh + sizeof(ip6);
	} else {
		return;
	}
	if (t->proto == IPPROTO_TCP_) {
		struct tcphdr th;
		if (bpf_probe_read_kernel(&th, sizeof(th), head + l4))
			return;
		t->sport = bpf_ntohs(th.source);
		t->dport = bpf_ntohs(th.dest);
		t->tcp_flags = ((__u8 *)&th)[13];
	} else if (t->proto == IPPROTO_UDP_) {
		struct udphdr uh;
		if (bpf_probe_read_kernel(&uh, sizeof(uh), head + l4))
			return;
		t->sport = bpf_ntohs(uh.source);
		t->dport = bpf_ntohs(uh.dest);
	}
}
#endif
