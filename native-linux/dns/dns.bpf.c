// SPDX-License-Identifier: GPL-2.0
/* dns: DNS messages (UDP and TCP, IPv4 and IPv6, port 53) seen on the node, for parsing in the agent.
 *
 * Two hooks share one capture (dns_capture) and one ring buffer:
 * - dns_socket_filter, a socket filter (SEC "socket") on an AF_PACKET/ETH_P_ALL raw socket that is not
 *   bound to an interface and ignores outgoing packets (PACKET_IGNORE_OUTGOING): every packet that
 *   arrives on any interface of the agent's network namespace (Retina's hook, arrivals only). It
 *   returns 0, so nothing is ever queued on the socket.
 * - retina_dns_egress, tc egress on every interface but lo and bridge ports (the agent leaves those out:
 *   what the host sends through a bridge leaves the bridge device first): the packets built on this host
 *   (ingress_ifindex 0) as they leave. A forwarded packet was seen arriving and is declined in a few instructions.
 * A tap that saw packets leaving would clone each of them before its filter ran (dev_queue_xmit_nit):
 * a fifth of a 64-byte UDP flood's rate on a small node (bench/datapath/README.md); tc's program runs
 * on the packet itself.
 *
 * Each message is counted once per node: a packet that arrived (host, broadcast, ...) is kept, a packet
 * leaving only when it was built here; on loopback, which shows each packet leaving and arriving, the
 * copy arriving (lo has no tc program). */
#include "retina.h"

#define DNS_PORT 53
#define DNS_CAPTURE 1024 /* bytes of each packet copied (headers + the DNS message's start) */
#define PACKET_OUTGOING_ 4
#define LOOPBACK_IFINDEX_ 1
#define TC_ACT_UNSPEC_ -1 /* let the next filter or the default action decide */

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

#define HDR_BYTES 64 /* loaded at once: the link header and, in the common case, the IP header and the ports */

/* min(len, max) for a copy of `len` >= 1 bytes (`max` a power of two), in a form the verifier of every
 * kernel can prove is in [1, max]: 5.10's and 6.1's do not carry a `len < 1` test over to the register
 * clang passes (they refused `n < 1 || load(n)`: "R3 min value is outside of the allowed memory range").
 * (n - 1) & (max - 1) is n - 1 for every n in [1, max], and its bounds, [0, max - 1], are what every
 * verifier computes for an AND; the barrier keeps clang from folding the AND away. */
static __always_inline __u32 copy_len(__u32 len, const __u32 max)
{
	__u32 n = len > max ? max : len;
	n -= 1;
	asm volatile("" : "+r"(n));
	n &= max - 1;
	return n + 1;
}

/* What the headers say, as offsets into the packet. */
struct l4_info {
	__u32 l3;   /* the IP header */
	__u32 l4;   /* the L4 header */
	__u32 end;  /* the IP packet's end, from its length field */
	__u16 ports[2];
	__u8 proto;
};

/* Reads the IP header at `l3` (a constant in each inlined copy, so every read of `h` is at a constant
 * offset: 5.10's verifier refuses stack reads at variable offsets) from the first `n` bytes of the
 * packet, loaded into `h`; the ports too when they lie there (IPv4 without options, IPv6 without
 * extension headers), otherwise one more load. 0 when the packet is not IP, not a first fragment, or
 * too short. */
static __always_inline int parse_ip(struct __sk_buff *skb, const __u8 *h, __u32 n, const __u32 l3, __u16 proto, struct l4_info *o)
{
	o->l3 = l3;
	if (proto == ETH_P_IP_) {
		if (n < l3 + 20)
			return 0;
		__u8 vihl = h[l3];
		if ((vihl >> 4) != 4 || ((h[l3 + 6] & 0x1f) | h[l3 + 7]))
			return 0; /* not IPv4, or a later fragment */
		__u32 ihl = (vihl & 0xf) * 4;
		o->proto = h[l3 + 9];
		o->end = l3 + (((__u32)h[l3 + 2] << 8) | h[l3 + 3]);
		o->l4 = l3 + ihl;
		if (ihl == 20 && n >= l3 + 24) {
			__builtin_memcpy(o->ports, &h[l3 + 20], 4);
			return 1;
		}
		return bpf_skb_load_bytes(skb, o->l4, o->ports, 4) == 0;
	}
	if (n < l3 + 40 || (h[l3] >> 4) != 6)
		return 0;
	__u8 nh = h[l3 + 6];
	__u32 off = l3 + 40;
	o->end = off + (((__u32)h[l3 + 4] << 8) | h[l3 + 5]);
	if (nh != 0 && nh != 43 && nh != 60 && n >= l3 + 44) {
		o->proto = nh;
		o->l4 = off;
		__builtin_memcpy(o->ports, &h[l3 + 40], 4);
		return 1;
	}
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
	o->proto = nh;
	o->l4 = off;
	return bpf_skb_load_bytes(skb, off, o->ports, 4) == 0;
}

/* Copies the packet into the ring when it is DNS; `pkt_type` is what the record says (PACKET_OUTGOING_ for retina_dns_egress). */
static __always_inline void dns_capture(struct __sk_buff *skb, __u32 pkt_type)
{
	__u16 proto = bpf_ntohs(RETINA_SKB(skb, protocol));
	if (proto != ETH_P_IP_ && proto != ETH_P_IPV6_)
		return;
	__u32 len = RETINA_SKB(skb, len);
	if (len < 1)
		return;
	/* One load of min(len, HDR_BYTES) bytes; the rest of h stays zero. Most packets are decided from h
	 * alone: one helper call where there were six. */
	__u8 h[HDR_BYTES] = {};
	__u32 n = copy_len(len, HDR_BYTES);
	if (bpf_skb_load_bytes(skb, 0, h, n))
		return;
	/* Ethernet-like devices (and lo) show the link header, others start at the IP header. */
	struct l4_info o = {};
	__u16 et = n >= 14 ? ((__u16)h[12] << 8) | h[13] : 0;
	int ok;
	if (et == proto)
		ok = parse_ip(skb, h, n, 14, proto, &o);
	else if (et == ETH_P_8021Q_)
		ok = parse_ip(skb, h, n, 18, proto, &o);
	else
		ok = parse_ip(skb, h, n, 0, proto, &o);
	if (!ok)
		return;
	if (o.ports[0] != bpf_htons(DNS_PORT) && o.ports[1] != bpf_htons(DNS_PORT))
		return;
	if (o.proto == IPPROTO_TCP_) {
		__u8 doff;
		if (bpf_skb_load_bytes(skb, o.l4 + 12, &doff, 1))
			return;
		if (o.end <= o.l4 + (doff >> 4) * 4)
			return; /* no payload: handshake or ACK */
	} else if (o.proto != IPPROTO_UDP_) {
		return;
	}
	__u32 l3 = o.l3;
	struct dns_event *e = bpf_ringbuf_reserve(&retina_dns_events, sizeof(*e), 0);
	if (!e) {
		retina_count_lost(&retina_dns_lost);
		return;
	}
	__u32 c = copy_len(len, DNS_CAPTURE);
	e->ts_ns = bpf_ktime_get_boot_ns();
	e->len = len;
	e->ifindex = RETINA_SKB(skb, ifindex);
	e->l3_off = l3;
	e->pkt_type = pkt_type;
	e->pad = 0;
	if (bpf_skb_load_bytes(skb, 0, e->data, c)) {
		bpf_ringbuf_discard(e, 0);
		return;
	}
	e->cap_len = c;
	bpf_ringbuf_submit(e, retina_submit_flags(&retina_dns_events, wakeup_bytes));
}

SEC("socket")
int dns_socket_filter(struct __sk_buff *skb)
{
	__u32 pkt_type = RETINA_SKB(skb, pkt_type);
	if (pkt_type == PACKET_OUTGOING_)
		return 0; /* the socket ignores these; retina_dns_egress has the ones built here */
	dns_capture(skb, pkt_type);
	return 0;
}

/* Named with the project's prefix: clsact filters a killed agent left are found by the program's kernel name
 * (15 characters, "retina_dns_egre"), which no other product's program should share. */
SEC("tc")
int retina_dns_egress(struct __sk_buff *skb)
{
	if (RETINA_SKB(skb, ingress_ifindex) != 0 || RETINA_SKB(skb, ifindex) == LOOPBACK_IFINDEX_)
		return TC_ACT_UNSPEC_; /* forwarded: counted when it arrived; lo: counted arriving */
	dns_capture(skb, PACKET_OUTGOING_);
	return TC_ACT_UNSPEC_;
}

char LICENSE[] SEC("license") = "GPL";
