/** The dns plugin's keys: the size of its own ring buffer (packetParserRingBufferSize is packetparser's), how its tc programs attach. */
import { intKey, type ConfigSpec } from '../../../config/index.js';
import { tcModeKey, type TcMode } from '../ebpf-shared/hooks.js';

export interface DnsConfig {
  readonly dnsRingBufferSize: number;
  /** tcx (Linux 6.6+), clsact, or auto: tcx where the kernel has it. */
  readonly tcMode: TcMode;
}

export const dnsConfig: ConfigSpec<DnsConfig> = {
  dnsRingBufferSize: intKey('dnsRingBufferSize', 1 << 20, 'Ours: size in bytes of the dns plugin\'s kernel ring buffer (DNS packets waiting to be parsed).', {
    min: 4096, max: 1 << 30, powerOfTwo: true,
  }),
  tcMode: tcModeKey('dnsTcMode', 'dns'),
};
