/** dropreason's keys; pod-level flows follow enablePodLevel, their ring's size dropReasonRingBufferSize. */
import { enumKey, intKey, type ConfigSpec } from '../../../config/index.js';
import { DROP_REASON_NAMINGS, type DropReasonNaming } from './retina-names.js';

export interface DropreasonConfig {
  /** kernel: the kernel's drop-reason names; retina: Retina's value where one corresponds (retina-names.ts). */
  readonly dropReasonNames: DropReasonNaming;
  /** Bytes of the pod-level record ring (one page without enablePodLevel). */
  readonly dropReasonRingBufferSize: number;
  /** auto: the kernel's reasons where kfree_skb has them (BTF), the no-reason fallback elsewhere; always: the fallback everywhere. */
  readonly dropReasonFallback: DropReasonFallback;
}

export const DROP_REASON_FALLBACKS = ['auto', 'always'] as const;
export type DropReasonFallback = (typeof DROP_REASON_FALLBACKS)[number];

export const dropreasonConfig: ConfigSpec<DropreasonConfig> = {
  dropReasonNames: enumKey(
    'dropReasonNames',
    'kernel',
    DROP_REASON_NAMINGS,
    "Ours: the `reason` label of drop_count, drop_bytes and adv_drop_*: `kernel` (the kernel's names, NETFILTER_DROP, NO_SOCKET, ...) or `retina` (Retina's value where one corresponds, IPTABLE_RULE_DROP, UNKNOWN_DROP; the kernel's name otherwise).",
  ),
  // A ring costs twice its size in RSS (the kernel maps its data pages twice). 1 MiB holds about
  // 14 000 drop records, 0.3 s of a 50 000 drops/s flood (bench/agent/footprint.bench.ts: no loss).
  dropReasonRingBufferSize: intKey('dropReasonRingBufferSize', 1 << 20, "Ours: size in bytes of dropreason's kernel ring buffer for pod-level drop records (with enablePodLevel or hubble.enabled).", {
    min: 4096, max: 1 << 30, powerOfTwo: true,
  }),
  dropReasonFallback: enumKey(
    'dropReasonFallback',
    'auto',
    DROP_REASON_FALLBACKS,
    "Ours: `auto` reads the kernel's drop reason where kfree_skb passes one (Linux 5.17+, seen in the kernel's BTF) and falls back elsewhere (5.15: every drop counted, reason NETFILTER_DROP when freed by nf_hook_slow, NOT_SPECIFIED otherwise); `always` takes the fallback on any kernel (what 5.15 nodes report, seen on a newer one).",
  ),
};
