import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlow, type Flow } from '../../flow/index.js';
import { createMetricsRegistry } from '../registry.js';
import { createApiServerLatency } from './apiserver.js';

const API = '10.0.0.1';
const NODE = '10.1.0.5';
const req = (over: Partial<Flow>): Flow => createFlow({ srcIp: NODE, dstIp: API, srcPort: 50000, dstPort: 443, proto: 6, verdict: 'FORWARDED', direction: 'EGRESS', ...over });
const rep = (over: Partial<Flow>): Flow => createFlow({ srcIp: API, dstIp: NODE, srcPort: 443, dstPort: 50000, proto: 6, verdict: 'FORWARDED', direction: 'INGRESS', ...over });

function setup() {
  const t = { now: 1_000_000 };
  const metrics = createMetricsRegistry({ processMetrics: false });
  const lat = createApiServerLatency({ metrics, isApiServer: (ip) => ip === API, now: () => t.now });
  return { lat, t, text: async () => (await metrics.expose()).body };
}

describe('API-server latency', () => {
  it('measures request round trips by TCP timestamps, across a second boundary', async () => {
    const { lat, text } = setup();
    // sent at x.9995 s, answered at (x+1).0025 s: 3 ms, where sub-second subtraction gives -997 ms
    lat.consume({ source: 't', flows: [req({ timeMs: 1_999_999.5, tcpFlags: PSH_ACK, tcpTsval: 77 })] });
    lat.consume({ source: 't', flows: [rep({ timeMs: 2_000_002.5, tcpFlags: PSH_ACK, tcpTsval: 9, tcpTsecr: 77 })] });
    const body = await text();
    assert.match(body, /adv_node_apiserver_latency_bucket\{le="2\.5"\} 0/);
    assert.match(body, /adv_node_apiserver_latency_bucket\{le="3\.5"\} 1/);
    assert.match(body, /adv_node_apiserver_latency_sum 3\n/);
    assert.equal(lat.pending(), 0);
  });

  it('measures the handshake from SYN to SYN-ACK', async () => {
    const { lat, text } = setup();
    lat.consume({ source: 't', flows: [req({ timeMs: 10, tcpFlags: 0x02 }), rep({ timeMs: 11.25, tcpFlags: 0x12 })] });
    assert.match(await text(), /adv_node_apiserver_tcp_handshake_latency_sum 1\.25/);
  });

  it('counts requests without a reply once the TTL passes, and ignores other peers and bare ACKs', async () => {
    const { lat, t, text } = setup();
    lat.consume({ source: 't', flows: [
      req({ timeMs: t.now, tcpFlags: PSH_ACK, tcpTsval: 1 }),
      req({ timeMs: t.now, tcpFlags: 0x10, tcpTsval: 2 }),
      req({ timeMs: t.now, tcpFlags: PSH_ACK, tcpTsval: 3, dstIp: '10.9.9.9' }),
    ] });
    assert.equal(lat.pending(), 1);
    t.now += 600;
    lat.expire();
    assert.equal(lat.pending(), 0);
    assert.match(await text(), /adv_node_apiserver_no_response\{no_response="no_response"\} 1/);
  });
});

const PSH_ACK = 0x18;
