/*
 * An XDP program that drops every frame (XDP_DROP = 1). Attached natively to a veth, each frame it
 * drops counts in the veth's ethtool stat rx_queue_0_xdp_drops: the interface_stats test uses it to
 * make exact, known err/drop counts on chosen interfaces.
 */
__attribute__((section("xdp"), used)) int rtlu_xdp_drop(void *ctx)
{
	return 1;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
