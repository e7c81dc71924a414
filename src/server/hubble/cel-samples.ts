/**
 * The flows every CEL filter is tried on when compiled (cel.ts): it must yield a bool and not fail on
 * all of them. One of each kind this agent makes: a TCP flow between two pods (labels, workloads,
 * a service), a DNS answer, and a kernel drop of a UDP datagram.
 */
import { createFlow, type Endpoint } from '../../flow/index.js';
import { toHubbleFlow, type HubbleObject } from '../../flow/hubble/index.js';

const pod = (name: string, ns: string, app: string): Endpoint => Object.freeze({
  namespace: ns, podName: name, workloadKind: 'Deployment', workloadName: app, service: app, nodeName: 'node', zone: 'z', labels: Object.freeze({ app }),
});

export function celSamples(nodeName: string): HubbleObject[] {
  const a = pod('client-0', 'default', 'client');
  const b = pod('server-0', 'default', 'server');
  return [
    createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 80, tcpFlags: 2, direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT', isReply: false, source: a, destination: b, timeMs: 1 }),
    createFlow({ srcIp: '10.0.0.3', dstIp: '10.0.0.1', verdict: 'DNS', proto: 17, srcPort: 53, dstPort: 40001, direction: 'INGRESS', isReply: true, destination: a, timeMs: 2,
      dns: { query: 'example.com', qtype: 'A', rcode: 'NOERROR', answers: ['1.2.3.4'], isResponse: true, numAnswers: 1 } }),
    createFlow({ srcIp: 'fd00::1', dstIp: 'fd00::2', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 17, srcPort: 40002, dstPort: 9999, timeMs: 3 }),
  ].map((f) => toHubbleFlow(f, nodeName));
}
