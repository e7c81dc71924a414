// SPDX-License-Identifier: GPL-2.0
/* packetparser: pod-level flows. Parses every packet on the host side of pod veths (and, with low
 * aggregation, on the host interfaces), keeps a small connection table per observation interface,
 * and writes struct packet_event records (packet_event.h) into a ring buffer.
 *
 * Hooks: tc (SEC "tc", clsact or TCX) ingress + egress. On a pod veth's host side, ingress is what
 * the pod sent (FROM_ENDPOINT) and egress what it receives (TO_ENDPOINT); on a host interface,
 * ingress is FROM_NETWORK and egress TO_NETWORK. Every program returns TC_ACT_UNSPEC (-1): it never
 * changes what happens to the packet.
 *
 * Reporting: low aggregation writes one record per packet (packets = 1); high aggregation writes one
 * only for a new connection, a control flag (SYN, RST, or a flag not seen before in that direction
 * other than ACK, PSH and FIN), the connection's close (both directions), the report interval
 * elapsed for the direction, or a sampled packet (1 in sampling_rate, when it is above 1); the record
 * carries what the direction accumulated since its previous report. Counters are added atomically
 * and taken by subtracting what was read, so two CPUs never lose a packet between them. A connection
 * leaves the table at its close (packetparser_forget), else when it expires.
 *
 * The sweep (packetparser_sweep, never attached: the agent runs it with BPF_PROG_TEST_RUN) walks the
 * connection table in the kernel: it reports what a direction still holds once the report interval
 * has passed without a packet to carry it (or the connection expired, or the agent is stopping),
 * deletes expired connections, and sums the live ones for the conntrack_* gauges. So an idle or
 * finished connection's last packets are reported too, and the agent never reads the table.
 *
 * Service translation (the *_ct program variants, loaded when the kernel has the conntrack kfuncs):
 * a packet to a ClusterIP Service leaves the client pod (FROM_ENDPOINT, tc ingress) before
 * kube-proxy's DNAT, and its replies reach the client (TO_ENDPOINT, tc egress) after the reverse
 * NAT, so their Service-side address is not a pod. The kernel's conntrack entry
 * (bpf_skb_ct_lookup) names both real ends: the original tuple's source (the initiator) and the
 * reply tuple's source (the responder, the DNAT's backend). At a tc ingress the packet is as its
 * sender wrote it, so its destination is the one NAT may rewrite; at a tc egress NAT is done, so its
 * source is the one NAT rewrote. The record carries the real end instead (nat_lookup). The answer
 * is kept in the connection's entry (one lookup per connection and interface, not per packet, and
 * the sweep's records use it too). A connection's first packet at a tc ingress finds no entry
 * (conntrack creates it later, in PREROUTING): that one packet is reported as sent, to the
 * Service's address. */
#include "retina.h"
#include "packet_event.h"

/* The kernel's conntrack entry, only the fields read here (CO-RE: the ___pp flavour matches
 * struct nf_conn and friends, in vmlinux or in the nf_conntrack module's BTF). Defined locally: a
 * kernel with conntrack as a module has none of these in vmlinux.h. */
union nf_inet_addr___pp {
	__u32 all[4];
} __attribute__((preserve_access_index));
union nf_conntrack_man_proto___pp {
	__be16 all;
} __attribute__((preserve_access_index));
struct nf_conntrack_man___pp {
	union nf_inet_addr___pp u3;
	union nf_conntrack_man_proto___pp u;
} __attribute__((preserve_access_index));
struct nf_conntrack_tuple___pp {
	struct nf_conntrack_man___pp src;
} __attribute__((preserve_access_index));
struct nf_conntrack_tuple_hash___pp {
	struct nf_conntrack_tuple___pp tuple;
} __attribute__((preserve_access_index));
struct nf_conn___pp {
	struct nf_conntrack_tuple_hash___pp tuplehash[2]; /* IP_CT_DIR_ORIGINAL, IP_CT_DIR_REPLY */
} __attribute__((preserve_access_index));
/* The first 12 bytes every kernel with the kfunc accepts (NF_BPF_CT_OPTS_SZ was 12 before zones). */
struct bpf_ct_opts___pp {
	__s32 netns_id;
	__s32 error;
	__u8 l4proto;
	__u8 dir;
	__u8 reserved[2];
};
#define PP_CT_OPTS_SZ 12
#define PP_CURRENT_NETNS (-1) /* BPF_F_CURRENT_NETNS: the netns of the skb's device */

/* Weak: libbpf loads the object on a kernel without them; only the *_ct programs call them, and the
 * agent loads those only when the kernel's BTF has the kfuncs (src/ffi/linux/hooks.ts). */
extern struct nf_conn___pp *bpf_skb_ct_lookup(struct __sk_buff *skb, struct bpf_sock_tuple *tuple, __u32 tuple__sz,
					      struct bpf_ct_opts___pp *opts, __u32 opts__sz) __ksym __weak;
extern void bpf_ct_release(struct nf_conn___pp *ct) __ksym __weak;

#define TCP_FIN_ 0x01
#define TCP_SYN_ 0x02
#define TCP_RST_ 0x04
#define TCP_PSH_ 0x08
#define TCP_ACK_ 0x10
#define TCP_NS_ 0x100
#define TCP_OPTS_MAX 40
#define TCP_OPTS_WALK 8 /* options looked at before giving up on the timestamp */

#define NS_PER_SEC 1000000000ULL
#define CT_LIFETIME_TCP (360 * NS_PER_SEC)
#define CT_LIFETIME_CLOSING (30 * NS_PER_SEC)
#define CT_LIFETIME_SYN (60 * NS_PER_SEC)
#define CT_LIFETIME_NONTCP (60 * NS_PER_SEC)

/* The connection table's clock: CLOCK_MONOTONIC at the tick's resolution (bpf_ktime_get_coarse_ns,
 * Linux 5.11+), which decides lifetimes and report intervals of seconds as well as the nanosecond
 * clock and costs a seqcount read instead of a clock source read (bench/ebpf/packetparser-run.bench.ts:
 * 14-23 ns of a known connection's run here). Every expires_ns and dir[].last_report_ns is on it;
 * records carry bpf_ktime_get_ns, taken only when one is written. Kernels without the helper (5.10)
 * use bpf_ktime_get_ns: the CO-RE check against the kernel's enum makes the branch a constant the
 * verifier drops. The coarse clock is never ahead of the fine one, so the sweep, which compares the
 * table's times with this clock too, never sees one in its future. */
static __always_inline __u64 ct_clock(void)
{
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_ktime_get_coarse_ns))
		return bpf_ktime_get_coarse_ns();
	return bpf_ktime_get_ns();
}

/* Set by the agent before load. */
const volatile __u8 bypass_lookup = 0;        /* 1: report every packet, not only IPs of interest */
const volatile __u8 aggregate_high = 0;       /* dataAggregationLevel: 0 low, 1 high */
const volatile __u8 count_totals = 0;         /* enableConntrackMetrics: keep per-connection totals */
const volatile __u32 sampling_rate = 1;       /* dataSamplingRate */
const volatile __u64 report_interval_ns = 30 * NS_PER_SEC; /* conntrackReportInterval */
const volatile __u32 wakeup_bytes = 0;
const volatile __u32 fold_above_bytes = 0;    /* cpuBudget on: fold records while this much waits in the ring (0: never) */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 23);
} retina_packetparser_events SEC(".maps");

RETINA_LOST_MAP(retina_packetparser_lost);

/* IPs of interest: IPv6 addresses, IPv4 as v4-mapped (::ffff:a.b.c.d). Sized filterMapMaxEntries. */
struct pp_ip_key {
	__u8 addr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 255);
	__type(key, struct pp_ip_key);
	__type(value, __u8);
} retina_packetparser_filter SEC(".maps");

/* The filter's generation: the agent adds one after each change of the filter map
 * (src/plugins/linux/packetparser/index.ts), which makes every answer the per-CPU cache below holds stale. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} retina_packetparser_filter_gen SEC(".maps");

/* What the filter said of a pod veth's own pod (the source of what arrives from the pod, the destination
 * of what goes to it), per CPU, per interface and family (slot (ifindex * 2 + IPv6) % PP_IF_SLOTS): nearly
 * every packet on a veth has its pod's address on that side, so the filter (a hash lookup of 16 bytes) is
 * asked once per veth, family, CPU and generation instead of once or twice per packet. Per CPU: a slot is
 * never read half written. Another address on that side, or a veth sharing the slot, is looked up and takes
 * the slot. */
#define PP_IF_SLOTS 256
struct pp_if_slot {
	__u32 ifindex;
	__u32 gen;
	__u8 addr[16];
	__u8 family;
	__u8 interesting;
	__u16 pad;
	__u32 pad2;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PP_IF_SLOTS);
	__type(key, __u32);
	__type(value, struct pp_if_slot);
} retina_packetparser_if_cache SEC(".maps");

/* The connection table's key: the 5-tuple with the lower (address, port) end first, and the
 * interface it was observed on, so that two observation points of the same packet keep apart. */
struct pp_ct_key {
	__u8 a[16];
	__u8 b[16];
	__u16 port_a;
	__u16 port_b;
	__u32 ifindex;
	__u8 proto;
	__u8 family;
	__u16 pad;
};

/* One direction of a connection: what accumulated since its previous report. */
struct pp_ct_dir {
	__u64 last_report_ns;
	__u64 bytes;
	__u32 packets;
	__u32 flags;
	__u32 flag_counts[PP_FLAG_SLOTS];
};

/* nat_state: what the kernel's conntrack said about the connection (the *_ct programs). */
#define PP_NAT_UNKNOWN 0    /* not looked up yet, or no conntrack entry so far */
#define PP_NAT_NONE 1       /* the entry's real ends are the packet's: nothing to translate */
#define PP_NAT_TRANSLATED 2 /* nat_addr/nat_port replace the key's end nat_side in records */
#define PP_NAT_MAX_MISSES 4 /* lookups without an entry before giving up (traffic conntrack never sees) */
/* A non-TCP connection idle this long may have a new conntrack entry (another backend): look again.
 * The kernel's UDP timeout (nf_conntrack_udp_timeout) is 30 s. */
#define PP_NAT_RECHECK_IDLE (30 * NS_PER_SEC)

/* pp_ct_value.closing. Closed: a RST, or the ACK of the second FIN (no FIN, SYN or RST in it), when
 * both directions' held counts are reported (high aggregation) and the entry is deleted
 * (packetparser_forget); an entry stays closed only when a report could not be written, and then
 * every packet reports. */
#define PP_CT_OPEN 0
#define PP_CT_CLOSING 1
#define PP_CT_CLOSED 2

/* 208 bytes (src/plugins/linux/packetparser/maps.ts checks the size at load). */
struct pp_ct_value {
	__u64 expires_ns;       /* ct_clock() after which the entry is dead */
	__u8 initiator_is_a;    /* 1: forward = a -> b */
	__u8 direction;         /* PP_DIR_* of the connection */
	__u8 closing;           /* PP_CT_*: open, closing (a FIN or RST seen), closed */
	__u8 nat_state;         /* PP_NAT_* */
	__u32 flags_seen[2];    /* every flag seen, forward and reply */
	__u8 obs[2];            /* observation point of each direction's last packet (for the sweep) */
	__u16 pad2;
	__u64 total_packets[2]; /* forward (tx), reply (rx): only with count_totals */
	__u64 total_bytes[2];
	struct pp_ct_dir dir[2];
	__u8 nat_addr[16];      /* the real address of the key's end nat_side (PP_NAT_TRANSLATED) */
	__u16 nat_port;         /* and its port, host order */
	__u8 nat_side;          /* 0: key.a / port_a, 1: key.b / port_b */
	__u8 nat_misses;        /* lookups that found no entry */
	__u32 pad3;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct pp_ct_key);
	__type(value, struct pp_ct_value);
} retina_packetparser_conntrack SEC(".maps");

/* What the table saw, per CPU: entries inserted by the programs (a new key, not a dead entry
 * replaced) and deleted at a connection's close. With the sweep's deletions (pp_sweep_result.expired)
 * and its count of live entries, the agent works out how many the LRU evicted when the table was
 * full (src/plugins/linux/packetparser/table.ts): inserted - closed - expired - live. `untracked`:
 * packets of a new connection the table refused (the LRU found no element to give), not reported
 * (the agent counts them as lost). */
struct pp_ct_count {
	__u64 inserted;
	__u64 closed;
	__u64 untracked;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pp_ct_count);
} retina_packetparser_ct_count SEC(".maps");

/* Where a new connection's entry is made before it goes into the table: a value this size on the
 * stack, beside the packet's and the key's, leaves too little for the TCP options parser's frame. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pp_ct_value);
} retina_packetparser_scratch SEC(".maps");

/* What parse() found in one packet. */
struct pp_pkt {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u16 flags; /* TCP flags, NS as 0x100 */
	__u8 family;
	__u8 proto;
	__u32 tsval;
	__u32 tsecr;
};

/* TSval/TSecr from the TCP options (at most 40 bytes after the fixed header). The options are
 * copied into a zeroed 64-byte buffer and every index is masked with 63, so each read is in bounds
 * whatever the option lengths say (the verifier sees it at once). */
#define OPT(i) opts[(i) & 63]
/* A global function: verified once on its own, so its loop does not multiply the caller's states.
 * Returns TSval << 32 | TSecr, 0 when there is no timestamp option. */
__noinline __u64 packetparser_tcp_ts(struct __sk_buff *skb, __u32 off, __u32 olen)
{
	__u8 opts[64] = {};
	if (!skb)
		return 0;
	olen &= 0x3f;
	if (olen < 10 || olen > TCP_OPTS_MAX)
		return 0;
	if (bpf_skb_load_bytes(skb, off, opts, olen))
		return 0;
	__u32 i = 0;
	/* Unrolled: a fixed number of options (Linux puts the timestamp third at the latest: after
	 * MSS and SACK-permitted, or after two NOPs); a loop on a data-dependent stride would make the
	 * verifier follow every combination of option lengths. */
#pragma unroll
	for (int n = 0; n < TCP_OPTS_WALK; n++) {
		if (i + 1 >= olen)
			return 0;
		__u8 kind = OPT(i);
		if (kind == 0)
			return 0; /* end of options */
		if (kind == 1) {
			i++; /* NOP */
			continue;
		}
		__u8 len = OPT(i + 1);
		if (len < 2)
			return 0;
		if (kind == 8 && len == 10) {
			if (i + 10 > olen)
				return 0;
			__u64 tsval = ((__u32)OPT(i + 2) << 24) | ((__u32)OPT(i + 3) << 16) | ((__u32)OPT(i + 4) << 8) | OPT(i + 5);
			__u32 tsecr = ((__u32)OPT(i + 6) << 24) | ((__u32)OPT(i + 7) << 16) | ((__u32)OPT(i + 8) << 8) | OPT(i + 9);
			return tsval << 32 | tsecr;
		}
		i += len;
	}
	return 0;
}

/* The fields of each header, from a pointer to it: into the packet (parse(), the headers in the
 * linear part) or to a stack copy (parse_copied(), the rare packet whose headers are not). */
static __always_inline void ip4_fields(struct pp_pkt *p, const struct iphdr *ip)
{
	p->family = 4;
	p->proto = ip->protocol;
	__builtin_memcpy(p->saddr, &ip->saddr, 4);
	__builtin_memcpy(p->daddr, &ip->daddr, 4);
}

static __always_inline void ip6_fields(struct pp_pkt *p, const struct ipv6hdr *ip6)
{
	p->family = 6;
	p->proto = ip6->nexthdr;
	__builtin_memcpy(p->saddr, &ip6->saddr, 16);
	__builtin_memcpy(p->daddr, &ip6->daddr, 16);
}

/* Ports and flags from the fixed 20 bytes of a TCP header; returns its length (data offset). */
static __always_inline __u32 tcp_fields(struct pp_pkt *p, const __u8 *th)
{
	p->sport = ((__u16)th[0] << 8) | th[1];
	p->dport = ((__u16)th[2] << 8) | th[3];
	p->flags = th[13] | ((th[12] & 1) ? TCP_NS_ : 0);
	return (th[12] >> 4) * 4;
}

static __always_inline void udp_fields(struct pp_pkt *p, const __u8 *uh)
{
	p->sport = ((__u16)uh[0] << 8) | uh[1];
	p->dport = ((__u16)uh[2] << 8) | uh[3];
}

static __always_inline void tcp_options(struct pp_pkt *p, struct __sk_buff *skb, __u32 l4, __u32 doff)
{
	if (doff <= 20)
		return;
	__u64 ts = packetparser_tcp_ts(skb, l4 + 20, doff - 20);
	p->tsval = ts >> 32;
	p->tsecr = (__u32)ts;
}

#define PP_NOT_IP 0
#define PP_PARSED 1
#define PP_COPY 2 /* the headers go on past the linear part: parse_copied() */

/* Ethernet (+ one 802.1Q tag), IPv4 or IPv6, then TCP/UDP ports, TCP flags and timestamps, read in
 * place (direct packet access: a helper call per header costs more than the rest of the parse).
 * The packet is never changed: no bpf_skb_pull_data, which would un-clone TCP's skbs. Returns
 * PP_COPY when a header is cut by the end of the linear part of a longer skb. */
static __always_inline int parse(struct __sk_buff *skb, struct pp_pkt *p)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	int cut = (__u32)(end - data) < skb->len; /* a header past `end` may still be in the pages */
	if (data + 14 > end)
		return cut ? PP_COPY : PP_NOT_IP;
	__u16 proto = ((struct ethhdr *)data)->h_proto;
	__u32 l3 = 14;
	if (proto == bpf_htons(ETH_P_8021Q_)) {
		if (data + 18 > end)
			return cut ? PP_COPY : PP_NOT_IP;
		proto = *(__u16 *)(data + 16);
		l3 = 18;
	}
	__u8 *l4;
	if (proto == bpf_htons(ETH_P_IP_)) {
		struct iphdr *ip = data + l3;
		if ((void *)(ip + 1) > end)
			return cut ? PP_COPY : PP_NOT_IP;
		if (ip->version != 4)
			return PP_NOT_IP;
		ip4_fields(p, ip);
		if (ip->frag_off & bpf_htons(0x1fff))
			return PP_PARSED; /* a later fragment: no ports */
		l4 = (void *)ip + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6_)) {
		struct ipv6hdr *ip6 = data + l3;
		if ((void *)(ip6 + 1) > end)
			return cut ? PP_COPY : PP_NOT_IP;
		ip6_fields(p, ip6);
		l4 = (void *)(ip6 + 1);
	} else {
		return PP_NOT_IP;
	}
	if (p->proto == IPPROTO_TCP_) {
		if ((void *)(l4 + 20) > end)
			return cut ? PP_COPY : PP_PARSED;
		__u32 doff = tcp_fields(p, l4);
		if (doff >= 32 && (void *)(l4 + 32) <= end && l4[20] == 1 && l4[21] == 1 && l4[22] == 8 && l4[23] == 10) {
			/* Linux's layout after the handshake: NOP, NOP, timestamps. */
			p->tsval = ((__u32)l4[24] << 24) | ((__u32)l4[25] << 16) | ((__u32)l4[26] << 8) | l4[27];
			p->tsecr = ((__u32)l4[28] << 24) | ((__u32)l4[29] << 16) | ((__u32)l4[30] << 8) | l4[31];
		} else {
			tcp_options(p, skb, (__u32)((void *)l4 - data), doff);
		}
	} else if (p->proto == IPPROTO_UDP_) {
		if ((void *)(l4 + 4) > end)
			return cut ? PP_COPY : PP_PARSED;
		udp_fields(p, l4);
	}
	return PP_PARSED;
}

/* The same parse on copies of the headers (bpf_skb_load_bytes), for packets parse() sends here. */
static __always_inline int parse_copied(struct __sk_buff *skb, struct pp_pkt *p)
{
	__u16 proto;
	__u32 l3 = 14;
	__builtin_memset(p, 0, sizeof(*p));
	if (bpf_skb_load_bytes(skb, 12, &proto, 2))
		return PP_NOT_IP;
	if (proto == bpf_htons(ETH_P_8021Q_)) {
		if (bpf_skb_load_bytes(skb, 16, &proto, 2))
			return PP_NOT_IP;
		l3 = 18;
	}
	__u32 l4;
	if (proto == bpf_htons(ETH_P_IP_)) {
		struct iphdr ip;
		if (bpf_skb_load_bytes(skb, l3, &ip, sizeof(ip)) || ip.version != 4)
			return PP_NOT_IP;
		ip4_fields(p, &ip);
		if (ip.frag_off & bpf_htons(0x1fff))
			return PP_PARSED;
		l4 = l3 + ip.ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6_)) {
		struct ipv6hdr ip6;
		if (bpf_skb_load_bytes(skb, l3, &ip6, sizeof(ip6)))
			return PP_NOT_IP;
		ip6_fields(p, &ip6);
		l4 = l3 + sizeof(ip6);
	} else {
		return PP_NOT_IP;
	}
	if (p->proto == IPPROTO_TCP_) {
		__u8 th[20];
		if (bpf_skb_load_bytes(skb, l4, th, sizeof(th)))
			return PP_PARSED;
		tcp_options(p, skb, l4, tcp_fields(p, th));
	} else if (p->proto == IPPROTO_UDP_) {
		__u8 uh[4];
		if (bpf_skb_load_bytes(skb, l4, uh, sizeof(uh)))
			return PP_PARSED;
		udp_fields(p, uh);
	}
	return PP_PARSED;
}

static __always_inline int interesting(const __u8 *addr, __u8 family)
{
	struct pp_ip_key k = {};
	if (family == 4) {
		k.addr[10] = 0xff;
		k.addr[11] = 0xff;
		__builtin_memcpy(&k.addr[12], addr, 4);
	} else {
		__builtin_memcpy(k.addr, addr, 16);
	}
	return bpf_map_lookup_elem(&retina_packetparser_filter, &k) != 0;
}

/* interesting() of a pod veth's pod-side address, through the per-CPU cache (retina_packetparser_if_cache). */
static __always_inline int veth_pod_interesting(struct __sk_buff *skb, const __u8 *addr, __u8 family)
{
	__u32 zero = 0;
	__u32 *g = bpf_map_lookup_elem(&retina_packetparser_filter_gen, &zero);
	__u32 ifindex = skb->ifindex;
	__u32 slot = (ifindex * 2 + (family == 6)) % PP_IF_SLOTS;
	struct pp_if_slot *c = bpf_map_lookup_elem(&retina_packetparser_if_cache, &slot);
	if (!g || !c)
		return interesting(addr, family);
	__u64 a0, a1, c0, c1;
	__builtin_memcpy(&a0, addr, 8);
	__builtin_memcpy(&a1, addr + 8, 8);
	__builtin_memcpy(&c0, c->addr, 8);
	__builtin_memcpy(&c1, c->addr + 8, 8);
	if (c->ifindex == ifindex && c->gen == *g && c->family == family && a0 == c0 && a1 == c1)
		return c->interesting;
	int r = interesting(addr, family);
	c->ifindex = ifindex;
	c->gen = *g;
	c->family = family;
	__builtin_memcpy(c->addr, addr, 16);
	c->interesting = r;
	return r;
}

/* 1 when (saddr, sport) sorts before or equal to (daddr, dport). */
static __always_inline int src_first(const struct pp_pkt *p)
{
	__u64 s0, s1, d0, d1;
	__builtin_memcpy(&s0, p->saddr, 8);
	__builtin_memcpy(&s1, p->saddr + 8, 8);
	__builtin_memcpy(&d0, p->daddr, 8);
	__builtin_memcpy(&d1, p->daddr + 8, 8);
	if (s0 != d0)
		return s0 < d0;
	if (s1 != d1)
		return s1 < d1;
	return p->sport <= p->dport;
}

static __always_inline __u8 obs_direction(__u8 obs)
{
	return (obs == PP_FROM_ENDPOINT || obs == PP_TO_NETWORK) ? PP_DIR_EGRESS : PP_DIR_INGRESS;
}

static __always_inline __u64 lifetime(const struct pp_ct_value *v, __u8 proto)
{
	if (proto != IPPROTO_TCP_)
		return CT_LIFETIME_NONTCP;
	if (v->closing)
		return CT_LIFETIME_CLOSING;
	if (!((v->flags_seen[0] | v->flags_seen[1]) & TCP_ACK_))
		return CT_LIFETIME_SYN;
	return CT_LIFETIME_TCP;
}

static __always_inline void count_flags(struct pp_ct_dir *d, __u16 f)
{
	if (f & TCP_FIN_)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_FIN], 1);
	if ((f & TCP_SYN_) && (f & TCP_ACK_))
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_SYNACK], 1);
	else if (f & TCP_SYN_)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_SYN], 1);
	else if (f & TCP_ACK_)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_ACK], 1);
	if (f & TCP_RST_)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_RST], 1);
	if (f & TCP_PSH_)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_PSH], 1);
	if (f & 0x20)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_URG], 1);
	if (f & 0x40)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_ECE], 1);
	if (f & 0x80)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_CWR], 1);
	if (f & TCP_NS_)
		__sync_fetch_and_add(&d->flag_counts[PP_FLAG_NS], 1);
}

/* Moves what `d` accumulated into the record: read, then subtract what was read (a concurrent add
 * stays for the next report). */
static __always_inline void take(struct pp_ct_dir *d, struct packet_event *e)
{
	__u32 n = d->packets;
	__u64 b = d->bytes;
	__sync_fetch_and_add(&d->packets, -n);
	__sync_fetch_and_add(&d->bytes, -b);
	e->packets = n;
	e->bytes = b;
	e->tcp_flags = d->flags;
	d->flags = 0;
#pragma unroll
	for (int i = 0; i < PP_FLAG_SLOTS; i++) {
		__u32 c = d->flag_counts[i];
		e->flag_counts[i] = c;
		if (c)
			__sync_fetch_and_add(&d->flag_counts[i], -c);
	}
}

/* packet_event.peer_hash: a hash of the record's two addresses, by which the agent's pipeline workers
 * pick the worker that counts it (one pair's records in one worker: src/pipeline/raw-sink.ts), so each
 * worker need not hash 32 bytes of every record to find its own. Each 32-bit word (read as the agent's
 * little-endian hosts read it) mixed in with a multiply and a shift, then murmur3's finalizer;
 * src/plugins/linux/packetparser/peer-hash.ts computes the same (and the tests compare them). Set last,
 * after nat_apply(). */
static __always_inline void set_peer_hash(struct packet_event *e)
{
	__u32 h = 0x811c9dc5;
	__u32 w;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__builtin_memcpy(&w, e->saddr + 4 * i, 4);
		h = (h ^ w) * 0x9e3779b1;
		h ^= h >> 15;
	}
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__builtin_memcpy(&w, e->daddr + 4 * i, 4);
		h = (h ^ w) * 0x9e3779b1;
		h ^= h >> 15;
	}
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	e->peer_hash = h;
}

static __always_inline void fill(struct packet_event *e, const struct pp_pkt *p, struct __sk_buff *skb, __u64 now, __u8 obs)
{
	e->ts_ns = now;
	__builtin_memcpy(e->saddr, p->saddr, 16);
	__builtin_memcpy(e->daddr, p->daddr, 16);
	e->sport = p->sport;
	e->dport = p->dport;
	e->family = p->family;
	e->proto = p->proto;
	e->obs_point = obs;
	e->tsval = p->tsval;
	e->tsecr = p->tsecr;
	e->ifindex = skb->ifindex;
	e->peer_hash = 0;
}

/* The CPU budget (cpuBudget; src/plugins/linux/packetparser/budget.ts). While the agent finds itself
 * over its budget it sets a rate of records per second per CPU in retina_packetparser_budget; a
 * record beyond it (per CPU, a token bucket) is not written: its packets, bytes and flags are added
 * to an in-kernel aggregate keyed by what the agent's metrics look at (the record's addresses, the
 * responder's port, protocol, interface, observation point, direction, is_reply: the initiator's
 * ephemeral port is left out, so a storm of short connections between two pods folds into a few
 * entries). The agent flushes the aggregates every second (packetparser_sweep with input byte 1 set,
 * reason PP_REPORT_AGGREGATED), so every packet is still counted once; what each record would have
 * been (its own flow, its port, its timestamps) is what is given up, and counted here per CPU.
 * With the budget on, a record that finds the ring fold_above_bytes full (three quarters: the agent
 * has fallen behind, whatever its CPU) is folded too, rather than lost when the ring is full. */
struct pp_budget_cfg {
	__u64 rate;  /* records per second per CPU written as they are; 0: no limit */
	__u64 burst; /* records a CPU may write at once after a quiet spell */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pp_budget_cfg);
} retina_packetparser_budget SEC(".maps");

/* Per CPU: the token bucket (tokens in 1e-9 records) and what the budget did (read by the agent). */
struct pp_budget_cpu {
	__u64 tokens;
	__u64 last_ns;
	__u64 folded_budget;   /* records folded into an aggregate: over the rate */
	__u64 folded_pressure; /* records folded into an aggregate: the ring fold_above_bytes full */
	__u64 agg_full;        /* records written anyway: the aggregate map had no room (nothing is lost) */
};

#define PP_FOLD_NO 0
#define PP_FOLD_BUDGET 1
#define PP_FOLD_PRESSURE 2

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pp_budget_cpu);
} retina_packetparser_budget_cpu SEC(".maps");

/* 44 bytes, as struct pp_ct_key (the keyed sweep passes either). */
struct pp_agg_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport; /* 0 when the source is the initiator */
	__u16 dport; /* 0 when the destination is the initiator */
	__u32 ifindex;
	__u8 proto;
	__u8 family;
	__u8 obs;
	__u8 dir_reply; /* direction | is_reply << 4 */
};

_Static_assert(sizeof(struct pp_agg_key) == 44, "the keyed sweep passes aggregate and connection keys alike");

struct pp_agg_value {
	struct pp_ct_dir d; /* d.last_report_ns: the last packet added (written at most once a second) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pp_agg_key);
	__type(value, struct pp_agg_value);
} retina_packetparser_agg SEC(".maps");

/* A record being folded: built here (the stack has no room for it beside the packet and the key). */
struct pp_agg_scratch {
	struct packet_event e;
	struct pp_agg_key k;
	struct pp_agg_value zero;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pp_agg_scratch);
} retina_packetparser_agg_scratch SEC(".maps");

/* PP_FOLD_NO: write this record (a token was there, or no limit is set, and the ring has room);
 * else fold it, and why. The ring's fill is the agent's drain falling behind (whatever its CPU): a
 * folded record is counted exactly, a record the full ring refuses is lost. */
static __always_inline int budget_fold(__u64 now)
{
	if (fold_above_bytes && bpf_ringbuf_query(&retina_packetparser_events, BPF_RB_AVAIL_DATA) > fold_above_bytes)
		return PP_FOLD_PRESSURE;
	__u32 zero = 0;
	struct pp_budget_cfg *cfg = bpf_map_lookup_elem(&retina_packetparser_budget, &zero);
	if (!cfg || !cfg->rate)
		return PP_FOLD_NO;
	struct pp_budget_cpu *b = bpf_map_lookup_elem(&retina_packetparser_budget_cpu, &zero);
	if (!b)
		return PP_FOLD_NO;
	__u64 el = now - b->last_ns;
	if (el > NS_PER_SEC)
		el = NS_PER_SEC;
	b->last_ns = now;
	__u64 t = b->tokens + el * cfg->rate;
	__u64 cap = (cfg->burst ? cfg->burst : 1) * NS_PER_SEC;
	if (t > cap)
		t = cap;
	if (t < NS_PER_SEC) {
		b->tokens = t;
		return PP_FOLD_BUDGET;
	}
	b->tokens = t - NS_PER_SEC;
	return PP_FOLD_NO;
}

static __always_inline struct pp_agg_scratch *agg_scratch(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&retina_packetparser_agg_scratch, &zero);
}

static __always_inline void budget_count(int why)
{
	__u32 zero = 0;
	struct pp_budget_cpu *b = bpf_map_lookup_elem(&retina_packetparser_budget_cpu, &zero);
	if (!b)
		return;
	if (why == PP_FOLD_BUDGET)
		b->folded_budget++;
	else if (why == PP_FOLD_PRESSURE)
		b->folded_pressure++;
	else
		b->agg_full++;
}

/* Folds the record in the scratch (its fields filled) into its aggregate: one packet of `len` bytes
 * and flags `f` when `d` is null, else everything direction `d` holds (taken as take() does).
 * Returns 0 when the aggregate map has no room: the caller writes the record after all. */
static __noinline int fold(struct pp_ct_dir *d, __u32 len, __u32 f, int why)
{
	struct pp_agg_scratch *s = agg_scratch();
	if (!s)
		return 0;
	struct packet_event *e = &s->e;
	struct pp_agg_key *k = &s->k;
	__builtin_memcpy(k->saddr, e->saddr, 16);
	__builtin_memcpy(k->daddr, e->daddr, 16);
	k->sport = e->is_reply == PP_REPLY_NO ? 0 : e->sport;
	k->dport = e->is_reply == PP_REPLY_YES ? 0 : e->dport;
	k->ifindex = e->ifindex;
	k->proto = e->proto;
	k->family = e->family;
	k->obs = e->obs_point;
	k->dir_reply = (e->direction & 0xf) | (e->is_reply << 4);
	struct pp_agg_value *a = bpf_map_lookup_elem(&retina_packetparser_agg, k);
	if (!a) {
		/* Born reported now: a flush running meanwhile (on another CPU) takes a new aggregate for an
		 * idle one until this packet's counts land in it, and would delete it under them. */
		__builtin_memset(&s->zero, 0, sizeof(s->zero));
		s->zero.d.last_report_ns = e->ts_ns;
		bpf_map_update_elem(&retina_packetparser_agg, k, &s->zero, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&retina_packetparser_agg, k);
		if (!a) {
			budget_count(PP_FOLD_NO);
			return 0;
		}
	}
	struct pp_ct_dir *ad = &a->d;
	if (!d) {
		__sync_fetch_and_add(&ad->packets, 1);
		__sync_fetch_and_add(&ad->bytes, len);
		if (e->proto == IPPROTO_TCP_) {
			if ((ad->flags | f) != ad->flags)
				ad->flags |= f;
			count_flags(ad, f);
		}
	} else {
		__u32 n = d->packets;
		__u64 b = d->bytes;
		__sync_fetch_and_add(&d->packets, -n);
		__sync_fetch_and_add(&d->bytes, -b);
		__sync_fetch_and_add(&ad->packets, n);
		__sync_fetch_and_add(&ad->bytes, b);
		__u32 fl = d->flags;
		d->flags = 0;
		if ((ad->flags | fl) != ad->flags)
			ad->flags |= fl;
#pragma unroll
		for (int i = 0; i < PP_FLAG_SLOTS; i++) {
			__u32 c = d->flag_counts[i];
			if (c) {
				__sync_fetch_and_add(&d->flag_counts[i], -c);
				__sync_fetch_and_add(&ad->flag_counts[i], c);
			}
		}
	}
	__u64 now = e->ts_ns;
	if (now - ad->last_report_ns > NS_PER_SEC)
		ad->last_report_ns = now;
	budget_count(why);
	return 1;
}

/* Asks the kernel's conntrack for the real end of this packet that NAT rewrites at this hook: its
 * destination at a tc ingress (before PREROUTING's DNAT), its source at a tc egress (after the
 * reverse NAT of a reply, or an SNAT). The tuple looked up is the packet's at an ingress and the
 * packet's reversed at an egress: either way one of the entry's two tuples. When it is the
 * original tuple the real end is the reply tuple's source (the responder: the DNAT's backend),
 * else the original tuple's source (the initiator). The answer goes into the connection's entry. */
static __noinline void nat_lookup(struct __sk_buff *skb, struct pp_ct_value *v, const struct pp_pkt *p, int ingress, int s_first)
{
	struct bpf_sock_tuple t = {};
	__u32 sz;
	const __u8 *ts = ingress ? p->saddr : p->daddr;
	const __u8 *td = ingress ? p->daddr : p->saddr;
	__u16 tsport = ingress ? p->sport : p->dport;
	__u16 tdport = ingress ? p->dport : p->sport;
	if (p->family == 4) {
		__builtin_memcpy(&t.ipv4.saddr, ts, 4);
		__builtin_memcpy(&t.ipv4.daddr, td, 4);
		t.ipv4.sport = bpf_htons(tsport);
		t.ipv4.dport = bpf_htons(tdport);
		sz = sizeof(t.ipv4);
	} else {
		__builtin_memcpy(t.ipv6.saddr, ts, 16);
		__builtin_memcpy(t.ipv6.daddr, td, 16);
		t.ipv6.sport = bpf_htons(tsport);
		t.ipv6.dport = bpf_htons(tdport);
		sz = sizeof(t.ipv6);
	}
	struct bpf_ct_opts___pp opts = {};
	opts.netns_id = PP_CURRENT_NETNS;
	opts.l4proto = p->proto;
	struct nf_conn___pp *ct = bpf_skb_ct_lookup(skb, &t, sz, &opts, PP_CT_OPTS_SZ);
	if (!ct) {
		if (++v->nat_misses >= PP_NAT_MAX_MISSES)
			v->nat_state = PP_NAT_NONE;
		return;
	}
	__u32 o[4], r[4];
	o[0] = ct->tuplehash[0].tuple.src.u3.all[0];
	o[1] = ct->tuplehash[0].tuple.src.u3.all[1];
	o[2] = ct->tuplehash[0].tuple.src.u3.all[2];
	o[3] = ct->tuplehash[0].tuple.src.u3.all[3];
	__u16 oport = bpf_ntohs(ct->tuplehash[0].tuple.src.u.all);
	r[0] = ct->tuplehash[1].tuple.src.u3.all[0];
	r[1] = ct->tuplehash[1].tuple.src.u3.all[1];
	r[2] = ct->tuplehash[1].tuple.src.u3.all[2];
	r[3] = ct->tuplehash[1].tuple.src.u3.all[3];
	__u16 rport = bpf_ntohs(ct->tuplehash[1].tuple.src.u.all);
	bpf_ct_release(ct);

	__u32 tsw[4], cur[4];
	__builtin_memcpy(tsw, ts, 16); /* IPv4 in the first word, the rest zero, as conntrack keeps it */
	int t_is_orig = tsw[0] == o[0] && tsw[1] == o[1] && tsw[2] == o[2] && tsw[3] == o[3] && tsport == oport;
	__u32 *real = t_is_orig ? r : o;
	__u16 real_port = t_is_orig ? rport : oport;
	__builtin_memcpy(cur, ingress ? p->daddr : p->saddr, 16);
	__u16 cur_port = ingress ? p->dport : p->sport;
	if (cur[0] == real[0] && cur[1] == real[1] && cur[2] == real[2] && cur[3] == real[3] && cur_port == real_port) {
		v->nat_state = PP_NAT_NONE;
		return;
	}
	__builtin_memcpy(v->nat_addr, real, 16);
	v->nat_port = real_port;
	/* the rewritten end is the packet's source at an egress, its destination at an ingress; the
	 * source is key.a when s_first */
	v->nat_side = (ingress ? !s_first : s_first) ? 0 : 1;
	v->nat_state = PP_NAT_TRANSLATED;
}

/* Puts the real end into a record whose source is the key's a end when src_is_a. */
static __always_inline void nat_apply(struct packet_event *e, const struct pp_ct_value *v, int src_is_a)
{
	if (v->nat_state != PP_NAT_TRANSLATED)
		return;
	if ((v->nat_side == 0) == (src_is_a != 0)) {
		__builtin_memcpy(e->saddr, v->nat_addr, 16);
		e->sport = v->nat_port;
	} else {
		__builtin_memcpy(e->daddr, v->nat_addr, 16);
		e->dport = v->nat_port;
	}
}

/* One packet into what direction `d` holds. */
static __always_inline void dir_add(struct pp_ct_dir *d, __u32 len, __u16 f, int tcp)
{
	__sync_fetch_and_add(&d->packets, 1);
	__sync_fetch_and_add(&d->bytes, len);
	if (tcp) {
		if ((d->flags | f) != d->flags)
			d->flags |= f;
		count_flags(d, f);
	}
}

/* Fills the scratch record as handle() would write this packet's record, and folds it (fold()). */
static __always_inline int fold_packet(struct __sk_buff *skb, const struct pp_pkt *p, const struct pp_ct_value *v, int s_first, int reply, __u8 obs, __u64 ts,
				       struct pp_ct_dir *d, __u32 len, int why)
{
	struct pp_agg_scratch *sc = agg_scratch();
	if (!sc)
		return 0;
	fill(&sc->e, p, skb, ts, obs);
	nat_apply(&sc->e, v, s_first);
	sc->e.direction = v->direction;
	sc->e.is_reply = reply ? PP_REPLY_YES : PP_REPLY_NO;
	return fold(d, len, p->flags, why);
}

/* The key of the connection packetparser_close_other() reports (per CPU: tc programs do not nest on one). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pp_ct_key);
} retina_packetparser_close_key SEC(".maps");

__noinline int packetparser_close_other(__u32 d, __u64 now, __u64 ts);

/* A connection that closed (pp_ct_value.closing PP_CT_CLOSED) leaves the table at once, when neither
 * direction still holds counts (at high aggregation both were just reported; a record the full ring
 * refused leaves its counts in the entry, which then stays, each later packet reports and tries
 * again, and at the latest the sweep reports them when it expires, 30 s on). So the table holds live
 * connections only, rather than every connection of the last 30 s closed cleanly: short pod-to-pod
 * connections filled the default 65 536 entries at about 1 100 a second, and then the LRU evicted
 * idle live connections with the counts they held. A packet of the connection after its close (a
 * late retransmission, a RST) makes a new entry, reported as new. An LRU map reuses a deleted
 * element at once: a packet of the same connection on another CPU at the same instant may add to
 * the element after its deletion, and its counts then go nowhere (a connection's packets after its
 * last ACK are retransmissions, if anything).
 *
 * A global function, verified once on its own (the key in retina_packetparser_close_key, as for
 * packetparser_close_other): inlined at each of handle()'s five exits it took 5.10's endpoint
 * programs from 143 358 to 228 830 instructions; as a global, 137 984 (bench/kernels/matrix.json). */
__noinline int packetparser_forget(void)
{
	__u32 zero = 0;
	struct pp_ct_key *key = bpf_map_lookup_elem(&retina_packetparser_close_key, &zero);
	if (!key)
		return 0;
	struct pp_ct_value *v = bpf_map_lookup_elem(&retina_packetparser_conntrack, key);
	if (!v || v->dir[0].packets || v->dir[1].packets)
		return 0;
	if (bpf_map_delete_elem(&retina_packetparser_conntrack, key))
		return 0;
	struct pp_ct_count *n = bpf_map_lookup_elem(&retina_packetparser_ct_count, &zero);
	if (n)
		n->closed++;
	return 0;
}

/* packetparser_forget() for the connection of `key`, when it has closed. */
static __always_inline void ct_forget(const struct pp_ct_value *v, const struct pp_ct_key *key)
{
	if (v->closing != PP_CT_CLOSED)
		return;
	__u32 zero = 0;
	struct pp_ct_key *ck = bpf_map_lookup_elem(&retina_packetparser_close_key, &zero);
	if (!ck)
		return;
	*ck = *key;
	packetparser_forget();
}

/* `ct`: the *_ct variants, which translate Service addresses through the kernel's conntrack. */
static __always_inline void handle(struct __sk_buff *skb, __u8 obs, int ct)
{
	struct pp_pkt p = {};
	int parsed = parse(skb, &p);
	if (parsed == PP_COPY)
		parsed = parse_copied(skb, &p);
	if (parsed != PP_PARSED)
		return;
	/* On a pod veth, the pod's own side first, from the per-CPU cache (veth_pod_interesting); a host
	 * interface has no such side. */
	if (!bypass_lookup) {
		if (obs == PP_FROM_ENDPOINT || obs == PP_TO_ENDPOINT) {
			const __u8 *pod = obs == PP_FROM_ENDPOINT ? p.saddr : p.daddr;
			const __u8 *peer = obs == PP_FROM_ENDPOINT ? p.daddr : p.saddr;
			if (!veth_pod_interesting(skb, pod, p.family) && !interesting(peer, p.family))
				return;
		} else if (!interesting(p.saddr, p.family) && !interesting(p.daddr, p.family)) {
			return;
		}
	}

	__u64 now = ct_clock();
	__u32 len = skb->len;
	int s_first = src_first(&p);
	struct pp_ct_key key = {};
	if (s_first) {
		__builtin_memcpy(key.a, p.saddr, 16);
		__builtin_memcpy(key.b, p.daddr, 16);
		key.port_a = p.sport;
		key.port_b = p.dport;
	} else {
		__builtin_memcpy(key.a, p.daddr, 16);
		__builtin_memcpy(key.b, p.saddr, 16);
		key.port_a = p.dport;
		key.port_b = p.sport;
	}
	key.ifindex = skb->ifindex;
	key.proto = p.proto;
	key.family = p.family;

	__u16 f = p.flags;
	int tcp = p.proto == IPPROTO_TCP_;
	int syn_only = tcp && (f & TCP_SYN_) && !(f & TCP_ACK_);
	int is_new = 0;
	struct pp_ct_value *v = bpf_map_lookup_elem(&retina_packetparser_conntrack, &key);
	if (!v || now >= v->expires_ns || (syn_only && v->closing)) {
		/* A new connection (or a dead entry, or a port reused after a close). The sender starts
		 * it, unless it answers: a SYN-ACK, or (first seen mid-stream) a TCP packet with ACK. */
		__u32 zero = 0;
		struct pp_ct_value *nv = bpf_map_lookup_elem(&retina_packetparser_scratch, &zero);
		if (!nv)
			return;
		__builtin_memset(nv, 0, sizeof(*nv));
		int sender_initiates = !tcp || syn_only || !(f & TCP_ACK_);
		nv->initiator_is_a = sender_initiates ? s_first : !s_first;
		nv->direction = obs_direction(obs);
		if (!sender_initiates)
			nv->direction = nv->direction == PP_DIR_EGRESS ? PP_DIR_INGRESS : PP_DIR_EGRESS;
		nv->dir[0].last_report_ns = now;
		nv->dir[1].last_report_ns = now;
		nv->expires_ns = now + CT_LIFETIME_SYN;
		if (v) {
			bpf_map_update_elem(&retina_packetparser_conntrack, &key, nv, BPF_ANY);
		} else if (!bpf_map_update_elem(&retina_packetparser_conntrack, &key, nv, BPF_NOEXIST)) {
			struct pp_ct_count *n = bpf_map_lookup_elem(&retina_packetparser_ct_count, &zero);
			if (n)
				n->inserted++;
		}
		/* None: not inserted, and no other CPU's insert of the same key either (or evicted at once). */
		v = bpf_map_lookup_elem(&retina_packetparser_conntrack, &key);
		if (!v) {
			struct pp_ct_count *n = bpf_map_lookup_elem(&retina_packetparser_ct_count, &zero);
			if (n)
				n->untracked++;
			return;
		}
		is_new = 1;
	}
	if (ct) {
		/* A non-TCP connection idle longer than the kernel keeps its entry: look again. */
		if (!tcp && v->nat_state != PP_NAT_UNKNOWN && v->expires_ns < now + (CT_LIFETIME_NONTCP - PP_NAT_RECHECK_IDLE)) {
			v->nat_state = PP_NAT_UNKNOWN;
			v->nat_misses = 0;
		}
		if (v->nat_state == PP_NAT_UNKNOWN && (tcp || p.proto == IPPROTO_UDP_) && (p.sport || p.dport))
			nat_lookup(skb, v, &p, obs == PP_FROM_ENDPOINT || obs == PP_FROM_NETWORK, s_first);
	}
	int reply = (v->initiator_is_a == s_first) ? 0 : 1;
	if (v->obs[reply & 1] != obs)
		v->obs[reply & 1] = obs;
	__u32 seen_before = v->flags_seen[reply & 1];
	if ((seen_before | f) != seen_before)
		v->flags_seen[reply & 1] |= f; /* racy only for flag bits, never counts */
	if (tcp && (f & (TCP_FIN_ | TCP_RST_)) && v->closing == PP_CT_OPEN)
		v->closing = PP_CT_CLOSING;
	/* Both directions run on different CPUs: refresh the expiry at most once a second (or when it
	 * must shrink, after FIN or RST), so the entry's first cache line is not written per packet. */
	__u64 exp = now + lifetime(v, p.proto);
	if (exp < v->expires_ns || exp - v->expires_ns > NS_PER_SEC)
		v->expires_ns = exp;
	if (count_totals) {
		__sync_fetch_and_add(&v->total_packets[reply & 1], 1);
		__sync_fetch_and_add(&v->total_bytes[reply & 1], len);
	}

	/* The connection closes with this packet: a RST, or the ACK of the second FIN. */
	int closes = tcp && v->closing == PP_CT_CLOSING &&
		     ((f & TCP_RST_) || ((v->flags_seen[0] & v->flags_seen[1] & TCP_FIN_) && (f & TCP_ACK_) && !(f & (TCP_SYN_ | TCP_FIN_))));

	struct packet_event *e;
	if (!aggregate_high) {
		if (closes)
			v->closing = PP_CT_CLOSED;
		__u64 ts = bpf_ktime_get_ns();
		int why = budget_fold(ts);
		if (why && fold_packet(skb, &p, v, s_first, reply, obs, ts, 0, len, why)) {
			ct_forget(v, &key);
			return;
		}
		e = bpf_ringbuf_reserve(&retina_packetparser_events, sizeof(*e), 0);
		if (!e) {
			retina_count_lost(&retina_packetparser_lost);
			ct_forget(v, &key);
			return;
		}
		fill(e, &p, skb, ts, obs);
		nat_apply(e, v, s_first);
		e->direction = v->direction;
		e->is_reply = reply ? PP_REPLY_YES : PP_REPLY_NO;
		e->report_reason = PP_REPORT_PACKET;
		e->tcp_flags = f;
		e->packets = 1;
		e->bytes = len;
#pragma unroll
		for (int i = 0; i < PP_FLAG_SLOTS; i++)
			e->flag_counts[i] = 0;
		set_peer_hash(e);
		bpf_ringbuf_submit(e, retina_submit_flags(&retina_packetparser_events, wakeup_bytes));
		ct_forget(v, &key);
		return;
	}

	struct pp_ct_dir *d = &v->dir[reply & 1];
	/* Until the close a closing connection's packets (the FINs, their ACKs, a half-closed side's data)
	 * are held like any others: a short connection is then four records at a veth (its first packet,
	 * the SYN-ACK, and both directions at the close) instead of one per packet. */
	/* A flag new to this direction other than ACK, PSH and FIN (which every connection has): URG, ECE,
	 * CWR, NS. */
	__u32 new_flags = (seen_before | f) & ~seen_before & ~(__u32)(TCP_ACK_ | TCP_PSH_ | TCP_FIN_);
	__u8 reason;
	if (is_new)
		reason = PP_REPORT_NEW;
	else if (tcp && ((f & (TCP_SYN_ | TCP_RST_)) || new_flags || closes || v->closing == PP_CT_CLOSED))
		reason = PP_REPORT_FLAGS;
	else if (now - d->last_report_ns >= report_interval_ns)
		reason = PP_REPORT_INTERVAL;
	else if (sampling_rate > 1 && bpf_get_prandom_u32() < 0xffffffffU / sampling_rate)
		reason = PP_REPORT_SAMPLED;
	else
		reason = 0xff; /* held */
	/* Folded (the CPU budget): this packet alone goes to the aggregate, and what the direction holds
	 * stays for its next report (a fold that only adds never races a report's take on another CPU).
	 * Once the connection closes, the direction's held counts go too, as a report would take them:
	 * the entry may be evicted from the table before a sweep reports them. */
	int added = 0;
	__u64 ts = 0;
	if (reason != 0xff) {
		ts = bpf_ktime_get_ns();
		if (closes) {
			v->closing = PP_CT_CLOSED;
			__u32 zero = 0;
			struct pp_ct_key *ck = bpf_map_lookup_elem(&retina_packetparser_close_key, &zero);
			if (ck) {
				*ck = key;
				packetparser_close_other(!(reply & 1), now, ts);
			}
		}
		int why = budget_fold(ts);
		if (why) {
			if (v->closing) {
				dir_add(d, len, f, tcp);
				added = 1;
			}
			if (fold_packet(skb, &p, v, s_first, reply, obs, ts, added ? d : 0, len, why)) {
				if (added)
					d->last_report_ns = now;
				ct_forget(v, &key);
				return;
			}
		}
	}
	if (!added)
		dir_add(d, len, f, tcp);
	if (reason == 0xff)
		return;
	/* Reserve first: without room, the counts stay for the next report. */
	e = bpf_ringbuf_reserve(&retina_packetparser_events, sizeof(*e), 0);
	if (!e) {
		retina_count_lost(&retina_packetparser_lost);
		return;
	}
	d->last_report_ns = now;
	fill(e, &p, skb, ts, obs);
	nat_apply(e, v, s_first);
	e->direction = v->direction;
	e->is_reply = reply ? PP_REPLY_YES : PP_REPLY_NO;
	e->report_reason = reason;
	take(d, e);
	set_peer_hash(e);
	bpf_ringbuf_submit(e, retina_submit_flags(&retina_packetparser_events, wakeup_bytes));
	ct_forget(v, &key);
}

/* What one sweep found; the agent reads it from retina_packetparser_sweep_result after the run. */
struct pp_sweep_result {
	__u64 packets_tx; /* live connections' totals (count_totals), initiators' direction */
	__u64 packets_rx;
	__u64 bytes_tx;
	__u64 bytes_rx;
	__u32 live;      /* connections kept */
	__u32 expired;   /* connections deleted */
	__u32 reported;  /* records written */
	__u32 lost;      /* records the ring had no room for (counted in the lost map too) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pp_sweep_result);
} retina_packetparser_sweep_result SEC(".maps");

struct pp_sweep_ctx {
	__u64 now; /* ct_clock(): compared with the table's times, written as a direction's last report */
	__u64 ts;  /* bpf_ktime_get_ns(): the records' time, and the CPU budget's and the aggregates' clock */
	__u32 final;
	__u32 agg; /* the keyed sweep: the keys are retina_packetparser_agg's */
	struct pp_sweep_result r;
};

/* The record of direction `d` of a connection: its sender and receiver from the key and the initiator. */
static __always_inline void sweep_fill(struct packet_event *e, const struct pp_ct_key *key, const struct pp_ct_value *v, int d, __u8 reason, __u64 now)
{
	/* forward (d 0) runs from the initiator; a is the initiator when initiator_is_a. */
	int src_is_a = (v->initiator_is_a != 0) == (d == 0);
	e->ts_ns = now;
	__builtin_memcpy(e->saddr, src_is_a ? key->a : key->b, 16);
	__builtin_memcpy(e->daddr, src_is_a ? key->b : key->a, 16);
	e->sport = src_is_a ? key->port_a : key->port_b;
	e->dport = src_is_a ? key->port_b : key->port_a;
	nat_apply(e, v, src_is_a);
	e->family = key->family;
	e->proto = key->proto;
	e->obs_point = v->obs[d & 1];
	e->direction = v->direction;
	e->is_reply = d ? PP_REPLY_YES : PP_REPLY_NO;
	e->report_reason = reason;
	e->tsval = 0;
	e->tsecr = 0;
	e->ifindex = key->ifindex;
	e->peer_hash = 0;
}

/* Reports what direction `d` of a connection holds, when it is due (folded into an aggregate when
 * the CPU budget says so). */
static __always_inline void sweep_dir(const struct pp_ct_key *key, struct pp_ct_value *v, int d, __u8 reason, struct pp_sweep_ctx *c)
{
	struct pp_ct_dir *dir = &v->dir[d & 1];
	if (!dir->packets)
		return;
	if (reason == PP_REPORT_IDLE && c->now - dir->last_report_ns < report_interval_ns)
		return;
	int why = budget_fold(c->ts);
	if (why) {
		struct pp_agg_scratch *sc = agg_scratch();
		if (sc) {
			sweep_fill(&sc->e, key, v, d, reason, c->ts);
			if (fold(dir, 0, 0, why)) {
				dir->last_report_ns = c->now;
				return;
			}
		}
	}
	struct packet_event *e = bpf_ringbuf_reserve(&retina_packetparser_events, sizeof(*e), 0);
	if (!e) {
		retina_count_lost(&retina_packetparser_lost);
		c->r.lost++;
		return;
	}
	sweep_fill(e, key, v, d, reason, c->ts);
	dir->last_report_ns = c->now;
	take(dir, e);
	set_peer_hash(e);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP); /* the agent drains the ring right after the sweep */
	c->r.reported++;
}

/* At a connection's close (handle()): what direction `d`, the other one, of the connection in
 * retina_packetparser_close_key still holds, as the sweep reports a direction (the table's ends, no
 * TCP timestamps), so a closed connection's counts do not wait for the sweep. Submitted without a
 * wake-up, as the sweep submits: the closing packet's own record comes next with the ring's usual one
 * (retina_submit_flags); when that one is folded instead (the CPU budget), the agent's flush of the
 * aggregates, every second while it folds, drains the ring, and when the ring is full the agent is
 * behind and drains anyway. A global function, which the verifier checks once on its own (it takes
 * only scalars, hence the key in a map): inlined, or a static function checked at every call on every
 * path, it took the endpoint programs from 148 848 to 351 405 instructions on 5.10. */
__noinline int packetparser_close_other(__u32 d, __u64 now, __u64 ts)
{
	__u32 zero = 0;
	struct pp_ct_key *key = bpf_map_lookup_elem(&retina_packetparser_close_key, &zero);
	if (!key)
		return 0;
	struct pp_ct_value *v = bpf_map_lookup_elem(&retina_packetparser_conntrack, key);
	if (!v)
		return 0;
	struct pp_sweep_ctx c = {};
	c.now = now;
	c.ts = ts;
	sweep_dir(key, v, d, PP_REPORT_FLAGS, &c);
	return 0;
}

/* An aggregate idle this long (no packet added, nothing held) is deleted by the flush. */
#define PP_AGG_IDLE_NS (10 * NS_PER_SEC)

/* Flushes one aggregate of the CPU budget: a record of what it holds (PP_REPORT_AGGREGATED, or
 * FINAL at stop), taken as take() does, so packets added meanwhile stay for the next flush. Only the
 * agent's runs flush (one at a time), so two flushes never take the same counts. */
static long agg_flush_one(struct bpf_map *map, struct pp_agg_key *k, struct pp_agg_value *a, struct pp_sweep_ctx *c)
{
	struct pp_ct_dir *d = &a->d;
	if (!d->packets) {
		/* signed: an aggregate made after this sweep read its clock is younger than c->ts */
		if ((__s64)(c->ts - d->last_report_ns) > PP_AGG_IDLE_NS)
			bpf_map_delete_elem(map, k);
		return 0;
	}
	struct packet_event *e = bpf_ringbuf_reserve(&retina_packetparser_events, sizeof(*e), 0);
	if (!e) {
		retina_count_lost(&retina_packetparser_lost);
		c->r.lost++;
		return 0;
	}
	e->ts_ns = c->ts;
	__builtin_memcpy(e->saddr, k->saddr, 16);
	__builtin_memcpy(e->daddr, k->daddr, 16);
	e->sport = k->sport;
	e->dport = k->dport;
	e->family = k->family;
	e->proto = k->proto;
	e->obs_point = k->obs;
	e->direction = k->dir_reply & 0xf;
	e->is_reply = k->dir_reply >> 4;
	e->report_reason = c->final ? PP_REPORT_FINAL : PP_REPORT_AGGREGATED;
	e->tsval = 0;
	e->tsecr = 0;
	e->ifindex = k->ifindex;
	take(d, e);
	set_peer_hash(e);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	c->r.reported++;
	return 0;
}

static long sweep_one(struct bpf_map *map, struct pp_ct_key *key, struct pp_ct_value *v, struct pp_sweep_ctx *c)
{
	int expired = c->now >= v->expires_ns;
	__u8 reason = c->final ? PP_REPORT_FINAL : expired ? PP_REPORT_EXPIRED : PP_REPORT_IDLE;
	if (aggregate_high) {
		sweep_dir(key, v, 0, reason, c);
		sweep_dir(key, v, 1, reason, c);
	}
	if (expired) {
		bpf_map_delete_elem(map, key);
		c->r.expired++;
		return 0;
	}
	c->r.live++;
	c->r.packets_tx += v->total_packets[0];
	c->r.packets_rx += v->total_packets[1];
	c->r.bytes_tx += v->total_bytes[0];
	c->r.bytes_rx += v->total_bytes[1];
	return 0;
}

/* The sweep: run by the agent (BPF_PROG_TEST_RUN) every few seconds, and once more at stop with the
 * first byte of the input packet set to 1 (report everything still held). It flushes the CPU
 * budget's aggregates after the connections (whose reports it may fold into them); with the second
 * byte set it flushes only those (the agent does every second while the budget folds records). */
SEC("tc")
int packetparser_sweep(struct __sk_buff *skb)
{
	struct pp_sweep_ctx c = {};
	__u8 in[2] = {};
	bpf_skb_load_bytes(skb, 0, in, 2);
	c.final = in[0];
	c.now = ct_clock();
	c.ts = bpf_ktime_get_ns();
	if (!in[1])
		bpf_for_each_map_elem(&retina_packetparser_conntrack, sweep_one, &c, 0);
	bpf_for_each_map_elem(&retina_packetparser_agg, agg_flush_one, &c, 0);
	__u32 zero = 0;
	bpf_map_update_elem(&retina_packetparser_sweep_result, &zero, &c.r, BPF_ANY);
	return 0;
}

/* The sweep for kernels without bpf_for_each_map_elem (5.13; 5.10 is Amazon Linux 2's): the agent lists the
 * table's keys and passes up to PP_SWEEP_KEYS of them in the input packet, after a 4-byte header (final,
 * count, 1 when the keys are the CPU budget's aggregates (retina_packetparser_agg) to flush, padding); each is swept as packetparser_sweep sweeps it (the same sweep_one). The result
 * is this run's; the agent sums the runs of one sweep.
 *
 * Each key is swept by a global function, which the verifier checks once, on its own, rather than once per
 * key and path: with sweep_one called in the loop directly, 5.10's verifier ran past its million
 * instructions at high aggregation. A global function takes only the context and scalars there, so the
 * sweep's context lives in a one-entry per-CPU map (a test run stays on one CPU). */
#define PP_SWEEP_KEYS 32
#define PP_SWEEP_HDR 4

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pp_sweep_ctx);
} retina_packetparser_sweep_ctx SEC(".maps");

__noinline int packetparser_sweep_key(struct __sk_buff *skb, __u32 off)
{
	__u32 zero = 0;
	struct pp_sweep_ctx *c = bpf_map_lookup_elem(&retina_packetparser_sweep_ctx, &zero);
	struct pp_ct_key key;
	if (!c || bpf_skb_load_bytes(skb, off, &key, sizeof(key)))
		return 0;
	if (c->agg) {
		struct pp_agg_value *a = bpf_map_lookup_elem(&retina_packetparser_agg, &key);
		if (a)
			agg_flush_one((struct bpf_map *)&retina_packetparser_agg, (struct pp_agg_key *)&key, a, c);
		return 0;
	}
	struct pp_ct_value *v = bpf_map_lookup_elem(&retina_packetparser_conntrack, &key);
	if (v)
		sweep_one((struct bpf_map *)&retina_packetparser_conntrack, &key, v, c);
	return 0;
}

SEC("tc")
int packetparser_sweep_keys(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct pp_sweep_ctx *c = bpf_map_lookup_elem(&retina_packetparser_sweep_ctx, &zero);
	__u8 hdr[PP_SWEEP_HDR];
	if (!c || bpf_skb_load_bytes(skb, 0, hdr, PP_SWEEP_HDR))
		return 0;
	__builtin_memset(&c->r, 0, sizeof(c->r));
	c->final = hdr[0];
	c->agg = hdr[2];
	c->now = ct_clock();
	c->ts = bpf_ktime_get_ns();
	__u32 n = hdr[1];
	for (__u32 i = 0; i < PP_SWEEP_KEYS && i < n; i++)
		packetparser_sweep_key(skb, PP_SWEEP_HDR + i * sizeof(struct pp_ct_key));
	bpf_map_update_elem(&retina_packetparser_sweep_result, &zero, &c->r, BPF_ANY);
	return 0;
}

/* The programs: the plain ones, and the *_ct ones that also translate Service addresses (loaded
 * when the kernel has bpf_skb_ct_lookup; src/ffi/linux/hooks.ts chooses). */
#define PP_PROGRAM(name, obs, ct)                 \
	SEC("tc")                                 \
	int name(struct __sk_buff *skb)           \
	{                                         \
		handle(skb, obs, ct);             \
		return -1; /* TC_ACT_UNSPEC */    \
	}

PP_PROGRAM(packetparser_endpoint_ingress, PP_FROM_ENDPOINT, 0)
PP_PROGRAM(packetparser_endpoint_egress, PP_TO_ENDPOINT, 0)
PP_PROGRAM(packetparser_host_ingress, PP_FROM_NETWORK, 0)
PP_PROGRAM(packetparser_host_egress, PP_TO_NETWORK, 0)
PP_PROGRAM(packetparser_endpoint_ingress_ct, PP_FROM_ENDPOINT, 1)
PP_PROGRAM(packetparser_endpoint_egress_ct, PP_TO_ENDPOINT, 1)
PP_PROGRAM(packetparser_host_ingress_ct, PP_FROM_NETWORK, 1)
PP_PROGRAM(packetparser_host_egress_ct, PP_TO_NETWORK, 1)

char LICENSE[] SEC("license") = "GPL";
