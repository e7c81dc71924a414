// SPDX-License-Identifier: GPL-2.0
/* ringbench: a synthetic producer for the ring-buffer drain benchmark (bench/ebpf/). Run with
 * BPF_PROG_TEST_RUN and repeat; each run writes `per_run` tcpretrans-shaped records. Never attached. */
#include "retina.h"
#include "retrans_event.h"

const volatile __u32 per_run = 64;
const volatile __u32 wakeup_bytes = 0; /* batched wake-ups, as the plugins' programs (retina.h) */
const volatile __u32 discard_every = 0; /* every n-th record reserved is discarded, not submitted (tests) */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} retina_ringbench_events SEC(".maps");

RETINA_LOST_MAP(retina_ringbench_lost);

static __u32 seq;

static long emit(__u32 i, void *ctx)
{
	struct retrans_event *e = bpf_ringbuf_reserve(&retina_ringbench_events, sizeof(*e), 0);
	if (!e) {
		retina_count_lost(&retina_ringbench_lost);
		return 0;
	}
	__u32 n = seq++; /* test runs are on one CPU */
	e->ts_ns = n;
	__builtin_memset(e->saddr, 0, 16);
	__builtin_memset(e->daddr, 0, 16);
	e->saddr[0] = 10;
	e->saddr[3] = 1;
	e->daddr[0] = 10;
	e->daddr[3] = 2;
	e->sport = 40000 + (n & 0xff);
	e->dport = 443;
	e->family = 4;
	e->state = 1;
	e->tcp_flags = 0x18;
	e->pad = 0;
	e->segs = 1;
	e->len = 1500;
	if (discard_every && n % discard_every == 0) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	bpf_ringbuf_submit(e, retina_submit_flags(&retina_ringbench_events, wakeup_bytes));
	return 0;
}

SEC("tc")
int ringbench_produce(struct __sk_buff *skb)
{
	bpf_loop(per_run, emit, 0, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
