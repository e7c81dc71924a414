/** dropreason's keys; pod-level flows follow enablePodLevel, ring size packetParserRingBufferSize. */
import { enumKey, type ConfigSpec } from '../../../config/index.js';
import { DROP_REASON_NAMINGS, type DropReasonNaming } from './retina-names.js';

export interface DropreasonConfig {
  /** kernel: the kernel's drop-reason names; retina: Retina's value where one corresponds (retina-names.ts). */
  readonly dropReasonNames: DropReasonNaming;
}

export const dropreasonConfig: ConfigSpec<DropreasonConfig> = {
  dropReasonNames: enumKey(
    'dropReasonNames',
    'kernel',
    DROP_REASON_NAMINGS,
    "Ours: the `reason` label of drop_count, drop_bytes and adv_drop_*: `kernel` (the kernel's names, NETFILTER_DROP, NO_SOCKET, ...) or `retina` (Retina's value where one corresponds, IPTABLE_RULE_DROP, UNKNOWN_DROP; the kernel's name otherwise).",
  ),
};
