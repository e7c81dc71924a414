/* SPDX-License-Identifier: GPL-2.0 */
/* The tcpretrans event record, decoded by src/plugins/linux/tcpretrans/decode.ts. ringbench writes
 * the same record, so the drain benchmark decodes exactly what the plugin does. */
#ifndef RETINA_RETRANS_EVENT_H
#define RETINA_RETRANS_EVENT_H

struct retrans_event {
	__u64 ts_ns;
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport; /* host order */
	__u16 dport;
	__u8 family; /* 4 or 6 */
	__u8 state;
	__u8 tcp_flags;
	__u8 pad;
	__u32 segs;
	__u32 len;
};
RETINA_BTF_RECORD(retrans_event);

#endif
