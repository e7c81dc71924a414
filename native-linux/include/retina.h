/* Shared by every retina-ts BPF program: kernel types (CO-RE, from the build host's BTF), libbpf's
 * helpers and the small conventions all objects follow. */
#ifndef RETINA_H
#define RETINA_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>

/* A __u32 field of the program's context, struct __sk_buff: UAPI, the same layout on every kernel, and
 * the verifier rewrites each access to it. Written `skb->field`, it would be a CO-RE relocation
 * (vmlinux.h marks every struct preserve_access_index), and an object with any CO-RE relocation makes
 * libbpf read and parse the kernel's whole BTF while it loads (/sys/kernel/btf/vmlinux: 5.5 MB, about
 * 10 ms of CPU, per object). Read at its offset, it is the same load without one: packetforward and dns
 * need no kernel type at all (test/conformance/core-relocations.test.ts checks they carry no CO-RE
 * relocation). */
#define RETINA_SKB(skb, field) (*(const volatile __u32 *)((const char *)(skb) + __builtin_offsetof(struct __sk_buff, field)))

#define RETINA_DIR_INGRESS 1
#define RETINA_DIR_EGRESS 2

#define ETH_P_IP_ 0x0800
#define ETH_P_IPV6_ 0x86DD
#define ETH_P_8021Q_ 0x8100
#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17
#define AF_INET_ 2
#define AF_INET6_ 10

/* One u64 per CPU: events the ring buffer had no room for (the agent reports them as
 * lost_events_counter{type="kernel"}). */
#define RETINA_LOST_MAP(name)                                                                  \
	struct {                                                                               \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                       \
		__uint(max_entries, 1);                                                        \
		__type(key, __u32);                                                            \
		__type(value, __u64);                                                          \
	} name SEC(".maps")

/* Puts a ring-buffer record type into the object's BTF, which otherwise holds only the types of
 * maps, globals and functions (a record reached through bpf_ringbuf_reserve's pointer is not among
 * them). One null read-only pointer per type, 8 bytes of .rodata, never read:
 * test/conformance/btf-layout.test.ts checks the agent's decoders against the type's BTF layout. */
#define RETINA_BTF_RECORD(tag) const struct tag *const retina_btf_##tag = 0

static __always_inline void retina_count_lost(void *map)
{
	__u32 zero = 0;
	__u64 *lost = bpf_map_lookup_elem(map, &zero);
	if (lost)
		*lost += 1;
}

/* Batched wake-ups: with wakeup_bytes > 0 a record wakes the agent when that much data waits in the
 * ring, or when no record of this object woke it in the last RETINA_WAKEUP_HOLDOFF_NS; in between,
 * records wait for the agent's follow-up drain, which it arms after each wake-up for longer than the
 * hold-off (RingBufferOptions.followUpMs). So a lone record wakes the agent at once, a busy ring at
 * most every hold-off (plus once per wakeup_bytes), and an idle agent needs no timer at all.
 * While wakeup_bytes wait and the agent has not drained them yet, records wake it at most once per
 * RETINA_WAKEUP_MIN_GAP_NS: each forced wake-up queues the kernel's irq_work again once the one
 * before has run: a self-IPI (on a VM an exit to the hypervisor) per record for as long as the agent
 * lags (the APIC write under bpf_ringbuf_submit shows in profiles of a flood of UDP drops).
 * 0 keeps the kernel's adaptive wake-up, one per drain. One object, one batched ring: the time of
 * the last wake-up is the object's (racy across CPUs: at worst one more wake-up). */
#define RETINA_WAKEUP_HOLDOFF_NS (50ULL * 1000 * 1000)
#define RETINA_WAKEUP_MIN_GAP_NS (1000ULL * 1000)
static __u64 retina_last_wakeup_ns;

static __always_inline __u64 retina_submit_flags(void *ring, __u32 wakeup_bytes)
{
	if (!wakeup_bytes)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 since = now - retina_last_wakeup_ns;
	if (since < RETINA_WAKEUP_MIN_GAP_NS)
		return BPF_RB_NO_WAKEUP;
	if (since < RETINA_WAKEUP_HOLDOFF_NS && bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) < wakeup_bytes)
		return BPF_RB_NO_WAKEUP;
	retina_last_wakeup_ns = now;
	return BPF_RB_FORCE_WAKEUP;
}

#endif
