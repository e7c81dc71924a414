/* SPDX-License-Identifier: GPL-2.0 */
/* The packetparser event record, decoded by src/plugins/linux/packetparser/decode.ts. One record is
 * one packet (dataAggregationLevel low) or one connection direction's report (high): the packets,
 * bytes and TCP flags seen since that direction's previous report. 120 bytes, no implicit padding.
 * Records written by the sweep (PP_REPORT_IDLE, _EXPIRED, _FINAL) carry no TCP timestamps. */
#ifndef RETINA_PACKET_EVENT_H
#define RETINA_PACKET_EVENT_H

/* observation_point: where the packet was seen (Cilium's names in the agent). */
#define PP_FROM_ENDPOINT 0 /* pod veth ingress: the pod sent it */
#define PP_TO_ENDPOINT 1   /* pod veth egress: the pod receives it */
#define PP_FROM_NETWORK 2  /* host interface ingress */
#define PP_TO_NETWORK 3    /* host interface egress */

/* direction: of the connection, relative to the endpoint that started it (conntrack). */
#define PP_DIR_UNKNOWN 0
#define PP_DIR_INGRESS 1
#define PP_DIR_EGRESS 2

/* is_reply */
#define PP_REPLY_NO 0
#define PP_REPLY_YES 1
#define PP_REPLY_UNKNOWN 2

/* report_reason */
#define PP_REPORT_PACKET 0   /* low aggregation: every packet */
#define PP_REPORT_NEW 1      /* first packet of a connection */
#define PP_REPORT_FLAGS 2    /* SYN/FIN/RST or a control-flag change */
#define PP_REPORT_INTERVAL 3 /* conntrackReportInterval elapsed for this direction */
#define PP_REPORT_SAMPLED 4  /* picked by dataSamplingRate */
#define PP_REPORT_IDLE 5     /* the sweep: the interval elapsed and no packet came to report it */
#define PP_REPORT_EXPIRED 6  /* the sweep: the connection expired; what it still held */
#define PP_REPORT_FINAL 7    /* the sweep at stop: everything still held */
#define PP_REPORT_AGGREGATED 8 /* the CPU budget's in-kernel aggregate: many connections' packets, the initiator's port 0 */

/* flag_counts slots (a SYN with ACK counts as SYNACK only; ACK counts ACKs without SYN). */
#define PP_FLAG_FIN 0
#define PP_FLAG_SYN 1
#define PP_FLAG_SYNACK 2
#define PP_FLAG_RST 3
#define PP_FLAG_PSH 4
#define PP_FLAG_ACK 5
#define PP_FLAG_URG 6
#define PP_FLAG_ECE 7
#define PP_FLAG_CWR 8
#define PP_FLAG_NS 9
#define PP_FLAG_SLOTS 10

struct packet_event {
	__u64 ts_ns;        /*   0: bpf_ktime_get_ns() (CLOCK_MONOTONIC) of the last packet */
	__u8 saddr[16];     /*   8: IPv4 in the first 4 bytes, network order */
	__u8 daddr[16];     /*  24 */
	__u16 sport;        /*  40: host order */
	__u16 dport;        /*  42 */
	__u8 family;        /*  44: 4 or 6 */
	__u8 proto;         /*  45: IANA number */
	__u8 obs_point;     /*  46: PP_FROM_ENDPOINT... */
	__u8 direction;     /*  47: PP_DIR_* */
	__u8 is_reply;      /*  48: PP_REPLY_* */
	__u8 report_reason; /*  49: PP_REPORT_* */
	__u16 tcp_flags;    /*  50: OR of the flags (FIN 1 ... CWR 0x80, NS 0x100) since the last report */
	__u32 packets;      /*  52 */
	__u64 bytes;        /*  56: skb->len summed */
	__u32 tsval;        /*  64: TCP timestamp option of the last packet, 0 if none (host order) */
	__u32 tsecr;        /*  68 */
	__u32 ifindex;      /*  72: interface the program ran on */
	__u32 flag_counts[PP_FLAG_SLOTS]; /* 76: packets per flag since the last report (TCP only) */
	__u32 peer_hash;    /* 116: a hash of saddr and daddr (peer_hash() in packetparser.bpf.c): the agent's
	                     * pipeline workers pick a record's worker by it */
};                          /* 120 */
RETINA_BTF_RECORD(packet_event);

#endif
