/** packetforward's keys. */
import { enumKey, listKey, type ConfigSpec } from '../../../config/index.js';

export interface PacketforwardConfig {
  /** Interfaces to count on; empty: the interfaces of the default routes (IPv4 and IPv6). */
  readonly interfaces: readonly string[];
  /** tcx (Linux 6.6+, BPF links), clsact (tc filters), or auto: tcx where the kernel has it. */
  readonly tcMode: 'auto' | 'tcx' | 'clsact';
}

export const packetforwardConfig: ConfigSpec<PacketforwardConfig> = {
  interfaces: listKey(
    'packetForwardInterfaces',
    [],
    "Ours: the node's external interfaces, where packetforward counts (empty: the default routes' interfaces, found at start).",
  ),
  tcMode: enumKey<'auto' | 'tcx' | 'clsact'>(
    'packetForwardTcMode',
    'auto',
    ['auto', 'tcx', 'clsact'],
    'Ours: how the tc programs attach: tcx (Linux 6.6+; detached by the kernel even if the agent is killed), clsact, or auto (tcx where the kernel has it).',
  ),
};
