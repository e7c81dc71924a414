import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeWorkloadEnv } from '../env.js';
import { parseEtl2pcapDrops, pktmonCommands } from './index.js';

const env = (extra: Record<string, string>) => decodeWorkloadEnv({ CAPTURE_NAME: 'c', NODE_HOST_NAME: 'n', ...extra });

describe('pktmon commands', () => {
  it('pktmon: filters from NETSH_FILTER after clearing the old ones, start with packet and file size', () => {
    const c = pktmonCommands(env({ NETSH_FILTER: 'IPv4.Address=(10.0.0.1,10.0.0.2) IPv6.Address=(fd00::5)', CAPTURE_PACKET_SIZE: '256', CAPTURE_MAX_SIZE: '50' }), 'C:\\t\\x.etl');
    assert.deepEqual(c.filters, [['filter', 'remove'], ['filter', 'add', 'retina-capture-1', '-i', '10.0.0.1'], ['filter', 'add', 'retina-capture-2', '-i', '10.0.0.2'], ['filter', 'add', 'retina-capture-3', '-i', 'fd00::5']]);
    assert.deepEqual(c.start, ['start', '--capture', '--file-name', 'C:\\t\\x.etl', '--pkt-size', '256', '--file-size', '50']);
    assert.deepEqual(pktmonCommands(env({}), 'x.etl').start, ['start', '--capture', '--file-name', 'x.etl', '--file-size', '100']);
    assert.equal(parseEtl2pcapDrops('Packets total: 10\nPacket drop count: 2\n'), 2);
    assert.equal(parseEtl2pcapDrops('done'), null);
  });
});
