import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMetricsRegistry } from '../../../metrics/index.js';
import { EMITS, degradedReason, publish, type Reading } from './collect.js';

const empty: Reading = {
  tcpState: [], tcpConnectionRemote: [], tcpConnectionStats: [], ipConnectionStats: [], udpConnectionStats: [], interfaceStats: [],
  failures: [], issues: [],
};

describe('publish', () => {
  it('replaces each family, so vanished states and interfaces disappear', async () => {
    const reg = createMetricsRegistry({ processMetrics: false });
    publish(reg, {
      ...empty,
      tcpState: [[{ state: 'SYN_SENT' }, 2]],
      interfaceStats: [[{ interface_name: 'veth1', statistic_name: 'rx_packets' }, 7], [{ interface_name: 'veth2', statistic_name: 'rx_packets' }, 1]],
    });
    let body = (await reg.expose()).body;
    assert.match(body, /tcp_state\{state="SYN_SENT"\} 2/);
    assert.match(body, /interface_name="veth1"/);
    publish(reg, { ...empty, tcpState: [[{ state: 'ESTABLISHED' }, 1]], interfaceStats: [[{ interface_name: 'veth2', statistic_name: 'rx_packets' }, 3]] });
    body = (await reg.expose()).body;
    assert.doesNotMatch(body, /SYN_SENT/);
    assert.doesNotMatch(body, /veth1/);
    assert.match(body, /interface_stats\{interface_name="veth2",statistic_name="rx_packets"\} 3/);
    assert.equal(EMITS.length, 6);
  });
});

describe('degradedReason', () => {
  it('is undefined for a whole reading and names what is missing otherwise', () => {
    assert.equal(degradedReason(empty), undefined);
    const err = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    assert.equal(
      degradedReason({ ...empty, failures: [{ what: '/proc/net/snmp', error: err }], issues: ['/proc/net/tcp line 3: not a socket line: "x"'] }, 'cannot load libc.so.6'),
      'could not read /proc/net/snmp (EACCES: permission denied); unparsed input: /proc/net/tcp line 3: not a socket line: "x"; ethtool stats unavailable: cannot load libc.so.6',
    );
  });
});
