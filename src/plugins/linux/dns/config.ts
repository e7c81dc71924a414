/** The dns plugin's keys: the size of its own ring buffer (packetParserRingBufferSize is packetparser's). */
import { intKey, type ConfigSpec } from '../../../config/index.js';

export interface DnsConfig {
  readonly dnsRingBufferSize: number;
}

export const dnsConfig: ConfigSpec<DnsConfig> = {
  dnsRingBufferSize: intKey('dnsRingBufferSize', 1 << 20, 'Ours: size in bytes of the dns plugin\'s kernel ring buffer (DNS packets waiting to be parsed).', {
    min: 4096, max: 1 << 30, powerOfTwo: true,
  }),
};
