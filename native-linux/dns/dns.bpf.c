// SPDX-License-Identifier: GPL-2.0
/* dns: DNS messages (UDP and TCP, IPv4 and IPv6, port 53) seen on the node, for parsing in the agent.
 *
 * Hook: socket filter (SEC "socket") on an AF_PACKET/ETH_P_ALL raw socket that is not bound to an
 * interface, so it sees every interface of the agent's network namespace, both directions (Retina's
 * hook; it needs neither kprobes nor tc). The filter copies DNS packets into a ring buffer and
 * returns 0, so nothing is ever queued on the socket.
 *
 * Each message is counted once per node: a packet that arrived (host, broadcast, ...) is kept; a
 * packet leaving is kept only when it was built here (ingress_ifindex 0), since a forwarded one was
 * already seen arriving; on loopback, which shows each packet leaving and arriving, only the copy
 * leaving is kept. */
#include "retina.h"

#define DNS_PORT 53
#define DNS_CAPTURE 1024 /* bytes of each packet copied (headers + the DNS message's start) */
#define PACKET_OUTGOING_ 4
#define LOOPBACK_IFINDEX_ 1

const volatile __u32 wakeup_bytes = 0;

struct dns_event {
	__u64 ts_ns;
	__u32 len;     /* packet length */
	__u32 cap_len; /* bytes in data */
	__u32 ifindex;
	__u16 l3_off;  /* where the IP header starts in data */
	__u8 pkt_type;
	__u8 pad;
	__u8 data[DNS_CAPTURE];
};
RETINA_BTF_RECORD(dns_event);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} retina_dns_events SEC(".maps");

RETINA_LOST_MAP(retina_dns_lost);

/* Offset of the L4 header and the protocol, or 0 when the packet is not IP / not a first fragment. */
static __always_inline __u32 l4_offset(struct __sk_buff *skb, __u32 l3, __u16 proto, __u8 *l4proto, __u32 *l4end)
{
	if (proto == ETH_P_IP_) {
		__u8 vihl;
		__u8 p;
		__u16 frag, tot;
		if (bpf_skb_load_bytes(skb, l3, &vihl, 1) || (vihl >> 4) != 4)
			return 0;
		if (bpf_skb_load_bytes(skb, l3 + 9, &p, 1) || bpf_skb_load_bytes(skb, l3 + 6, &frag, 2) ||
		    bpf_skb_load_bytes(skb, l3 + 2, &tot, 2))
			return 0;
		if (bpf_ntohs(frag) & 0x1fff)
			return 0;
		*l4proto = p;
		*l4end = l3 + bpf_ntohs(tot);
		return l3 + (vihl & 0xf) * 4;
	}
	if (proto == ETH_P_IPV6_) {
		__u8 nh;
		__u16 plen;
		__u32 off = l3 + 40;
		if (bpf_skb_load_bytes(skb, l3 + 6, &nh, 1) || bpf_skb_load_bytes(skb, l3 + 4, &plen, 2))
			return 0;
		*l4end = off + bpf_ntohs(plen);
#pragma unroll
		for (int i = 0; i < 4; i++) {
			if (nh != 0 && nh != 43 && nh != 60) /* hop-by-hop, routing, destination options */
				break;
			__u8 ext[2];
			if (bpf_skb_load_bytes(skb, off, ext, 2))
				return 0;
			nh = ext[0];
			off += (ext[1] + 1) * 8;
		}
		*l4proto = nh;
		return off;
	}
	return 0;
}

SEC("socket")
int dns_socket_filter(struct __sk_buff *skb)
{
	__u32 pkt_type = RETINA_SKB(skb, pkt_type);
	if (pkt_type == PACKET_OUTGOING_) {
		if (RETINA_SKB(skb, ingress_ifindex) != 0)
			return 0; /* forwarded: counted when it arrived */
	} else if (RETINA_SKB(skb, ifindex) == LOOPBACK_IFINDEX_) {
		return 0; /* loopback: counted leaving */
	}
	__u16 proto = bpf_ntohs(RETINA_SKB(skb, protocol));
	if (proto != ETH_P_IP_ && proto != ETH_P_IPV6_)
		return 0;
	/* Ethernet-like devices (and lo) show the link header, others start at the IP header. */
	__u32 l3 = 0;
	__u16 et;
	if (bpf_skb_load_bytes(skb, 12, &et, 2) == 0) {
		if (bpf_ntohs(et) == proto)
			l3 = 14;
		else if (bpf_ntohs(et) == ETH_P_8021Q_)
			l3 = 18;
	}
	__u8 l4proto = 0;
	__u32 l4end = 0;
	__u32 l4 = l4_offset(skb, l3, proto, &l4proto, &l4end);
	if (!l4)
		return 0;
	__u16 ports[2];
	if (bpf_skb_load_bytes(skb, l4, ports, 4))
		return 0;
	if (ports[0] != bpf_htons(DNS_PORT) && ports[1] != bpf_htons(DNS_PORT))
		return 0;
	if (l4proto == IPPROTO_TCP_) {
		__u8 doff;
		if (bpf_skb_load_bytes(skb, l4 + 12, &doff, 1))
			return 0;
		if (l4end <= l4 + (doff >> 4) * 4)
			return 0; /* no payload: handshake or ACK */
	} else if (l4proto != IPPROTO_UDP_) {
		return 0;
	}
	struct dns_event *e = bpf_ringbuf_reserve(&retina_dns_events, sizeof(*e), 0);
	if (!e) {
		retina_count_lost(&retina_dns_lost);
		return 0;
	}
	__u32 len = RETINA_SKB(skb, len);
	if (len < 1) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	/* The copy's length, min(len, DNS_CAPTURE), as the verifier of every kernel can prove it is in
	 * [1, DNS_CAPTURE]: 5.10's and 6.1's do not carry the `len < 1` test above over to the register
	 * clang passes (they refused `n < 1 || load(n)`: "R3 min value is outside of the allowed memory
	 * range"). (n - 1) & (DNS_CAPTURE - 1) is n - 1 for every n in [1, DNS_CAPTURE], and its bounds,
	 * [0, DNS_CAPTURE - 1], are what every verifier computes for an AND; the barrier keeps clang from
	 * folding the AND away. */
	__u32 n = len > DNS_CAPTURE ? DNS_CAPTURE : len;
	n -= 1;
	asm volatile("" : "+r"(n));
	n &= DNS_CAPTURE - 1;
	n += 1;
	e->ts_ns = bpf_ktime_get_boot_ns();
	e->len = len;
	e->ifindex = RETINA_SKB(skb, ifindex);
	e->l3_off = l3;
	e->pkt_type = pkt_type;
	e->pad = 0;
	if (bpf_skb_load_bytes(skb, 0, e->data, n)) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	e->cap_len = n;
	bpf_ringbuf_submit(e, retina_submit_flags(&retina_dns_events, wakeup_bytes));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
