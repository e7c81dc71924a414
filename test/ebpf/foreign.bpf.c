/*
 * A tc program that is not ours, standing in for a CNI's (Cilium, Calico eBPF): the tests attach it
 * with `tc filter add ... bpf da obj foreign.bpf.o sec tc` next to ours. It counts the packets it
 * sees in `packets` (its .bss map) and returns TC_ACT_UNSPEC, so later filters still run.
 */
typedef unsigned long long u64;

u64 packets = 0;

__attribute__((section("tc"), used)) int rtbpf_foreign(void *skb)
{
	__sync_fetch_and_add(&packets, 1);
	return -1;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
