import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeWorkloadEnv } from '../env.js';
import { parseTcpdumpSummary, pcapName, tcpdumpArgs } from './index.js';

const env = (extra: Record<string, string>) => decodeWorkloadEnv({ CAPTURE_NAME: 'c', NODE_HOST_NAME: 'n', ...extra });

describe('tcpdump arguments', () => {
  it('tcpdump: write as root, snap length, flags, interface, rotation, filter last', () => {
    assert.deepEqual(tcpdumpArgs(env({ TCPDUMP_FILTER: 'host 10.0.0.1', PCAP_FILTER: 'tcp' }), '/w/x.pcap', 'any'), ['-w', '/w/x.pcap', '-Z', 'root', '-i', 'any', '(host 10.0.0.1) and (tcp)']);
    assert.deepEqual(
      tcpdumpArgs(env({ CAPTURE_PACKET_SIZE: '128', CAPTURE_FILE_COUNT: '4', CAPTURE_MAX_SIZE: '20', TCPDUMP_FLAGS: '-p -U' }), '/w/x.pcap', 'eth0'),
      ['-w', '/w/x.pcap', '-Z', 'root', '-s', '128', '-p', '-U', '-i', 'eth0', '-C', '20', '-W', '4'],
    );
    assert.equal(pcapName('b', 'any', 1), 'b.pcap');
    assert.equal(pcapName('b', 'eth0.100', 2), 'b-eth0.100.pcap');
    assert.deepEqual(parseTcpdumpSummary('listening on any\n12 packets captured\n15 packets received by filter\n3 packets dropped by kernel\n'), { packets: 12, dropped: 3 });
    assert.deepEqual(parseTcpdumpSummary('tcpdump: killed'), { packets: null, dropped: null });
  });
});
