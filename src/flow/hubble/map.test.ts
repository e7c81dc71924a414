import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow, type Endpoint } from '../index.js';
import { compileFlowFilters } from './filter.js';
import { timestamp, timestampMs, toHubbleFlow } from './map.js';
import { loadFlowEnums } from './enums.js';

const ENUMS = loadFlowEnums(fileURLToPath(new URL('../../../../proto/hubble', import.meta.url)));

const web: Endpoint = {
  namespace: 'shop', podName: 'web-5d4f8c9b7-abcde', workloadKind: 'Deployment', workloadName: 'web', service: 'web', nodeName: 'n1', zone: 'z',
  labels: { app: 'web', tier: 'front' },
};

describe('toHubbleFlow', () => {
  it('maps a drop: verdict, kernel reason in Summary, endpoints with k8s: labels and workloads, service, direction, reply', () => {
    const h = toHubbleFlow(createFlow({
      srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: 5353, dstPort: 9999,
      direction: 'INGRESS', observationPoint: 'FROM_NETWORK', isReply: false, timeMs: 1_700_000_000_123.5, destination: web,
    }), 'node-x');
    assert.deepEqual(h, {
      time: { seconds: 1_700_000_000, nanos: 123_500_000 },
      verdict: 'DROPPED',
      IP: { source: '10.0.0.1', destination: '10.0.0.2', ipVersion: 'IPv4' },
      Type: 'L3_L4',
      l4: { protocol: 'UDP', UDP: { source_port: 5353, destination_port: 9999 } },
      destination: { namespace: 'shop', pod_name: 'web-5d4f8c9b7-abcde', labels: ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=shop', 'k8s:tier=front'], workloads: [{ name: 'web', kind: 'Deployment' }] },
      node_name: 'node-x',
      destination_service: { name: 'web', namespace: 'shop' },
      traffic_direction: 'INGRESS',
      trace_observation_point: 'FROM_NETWORK',
      is_reply: { value: false },
      event_type: { type: 1, sub_type: 0 },
      Summary: 'drop reason: NETFILTER_DROP',
    });
  });

  it('maps DNS to an L7 record with the query as an FQDN, and TCP flags; IPv6', () => {
    const dns = toHubbleFlow(createFlow({
      srcIp: 'fd00::2', dstIp: 'fd00::1', verdict: 'DNS', proto: 17, srcPort: 53, dstPort: 40000,
      dns: { query: 'api.example.com', qtype: 'AAAA', rcode: 'NXDOMAIN', answers: [], isResponse: true, numAnswers: 0 },
    }), 'n');
    assert.equal(dns['Type'], 'L7');
    assert.deepEqual(dns['IP'], { source: 'fd00::2', destination: 'fd00::1', ipVersion: 'IPv6' });
    assert.deepEqual(dns['l7'], { type: 'RESPONSE', record: 'dns', dns: { query: 'api.example.com.', observation_source: 'retina-ts', qtypes: ['AAAA'], rcode: 3 } });
    const tcp = toHubbleFlow(createFlow({ srcIp: '1.1.1.1', dstIp: '2.2.2.2', verdict: 'FORWARDED', proto: 6, srcPort: 1, dstPort: 2, tcpFlags: 2 | 16, nodeName: 'own' }), 'n');
    assert.deepEqual(tcp['l4'], { protocol: 'TCP', TCP: { source_port: 1, destination_port: 2, flags: { SYN: true, ACK: true } } });
    assert.equal(tcp['node_name'], 'own');
    assert.equal(tcp['Summary'], 'TCP Flags: SYN, ACK');
  });

  it('the filter reads the mapped flows: --verdict DROPPED --to-pod shop/web', () => {
    const m = compileFlowFilters([{ verdict: ['DROPPED'], destination_pod: ['shop/web'] }], [], ENUMS);
    const drop = toHubbleFlow(createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'DROPPED', proto: 6, destination: web }), 'n');
    const fwd = toHubbleFlow(createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, destination: web }), 'n');
    assert.equal(m.match(drop), true);
    assert.equal(m.match(fwd), false);
  });

  it('timestamps round-trip', () => {
    assert.equal(timestampMs(timestamp(1234.5)), 1234.5);
    assert.equal(timestampMs(undefined), undefined);
  });
});
