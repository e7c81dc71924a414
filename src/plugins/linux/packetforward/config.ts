/** packetforward's keys. */
import { listKey, type ConfigSpec } from '../../../config/index.js';
import { tcModeKey, type TcMode } from '../ebpf-shared/hooks.js';

export interface PacketforwardConfig {
  /** Interfaces to count on; empty: the interfaces of the default routes (IPv4 and IPv6). */
  readonly interfaces: readonly string[];
  /** tcx (Linux 6.6+, BPF links), clsact (tc filters), or auto: tcx where the kernel has it. */
  readonly tcMode: TcMode;
}

export const packetforwardConfig: ConfigSpec<PacketforwardConfig> = {
  interfaces: listKey(
    'packetForwardInterfaces',
    [],
    "Ours: the node's external interfaces, where packetforward counts (empty: the default routes' interfaces, found at start).",
  ),
  tcMode: tcModeKey('packetForwardTcMode', 'packetforward'),
};
