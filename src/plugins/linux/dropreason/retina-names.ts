/**
 * `dropReasonNames: retina`: the kernel's drop-reason names that have a Retina counterpart, so alerts
 * written for Retina's `reason` values keep firing. Written once; a name not listed keeps the kernel's.
 *
 * Retina's values (`pkg/utils/metadata_linux.proto`) come from kprobes on a few functions, ours from
 * `kfree_skb_reason()`; a kernel name maps only where both see the same packets:
 */
export const RETINA_REASON_OF_KERNEL: Readonly<Record<string, string>> = Object.freeze({
  // Retina: nf_hook_slow() returned an error (an iptables/nftables verdict NF_DROP). The kernel frees
  // exactly those packets in nf_hook_slow() with NETFILTER_DROP. A NAT (nf_nat_inet_fn) or conntrack
  // confirm (__nf_conntrack_confirm) NF_DROP also ends in nf_hook_slow() with this same reason, so
  // Retina's IPTABLE_NAT_DROP and CONNTRACK_ADD_DROP cannot be told apart here: they read IPTABLE_RULE_DROP.
  NETFILTER_DROP: 'IPTABLE_RULE_DROP',
  // Retina: a drop of no known type. The kernel: a drop whose caller gave no reason.
  NOT_SPECIFIED: 'UNKNOWN_DROP',
  // No kernel reason corresponds to TCP_CONNECT_BASIC / TCP_ACCEPT_BASIC / TCP_CLOSE_BASIC: Retina
  // counts failed connect()/accept() calls there, which drop no packet.
});

/** The values of `dropReasonNames`. */
export const DROP_REASON_NAMINGS = ['kernel', 'retina'] as const;
export type DropReasonNaming = (typeof DROP_REASON_NAMINGS)[number];

/** A kernel reason name as `naming` reports it: Retina's value where one corresponds, else unchanged. */
export function reportedReason(kernelName: string, naming: DropReasonNaming): string {
  return naming === 'retina' ? (RETINA_REASON_OF_KERNEL[kernelName] ?? kernelName) : kernelName;
}
