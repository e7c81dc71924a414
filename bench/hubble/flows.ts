/** The Hubble benchmarks' flows: 200 pods' endpoints behind an IP lookup, and fresh batches of enriched-to-be flows. */
import { createFlow, type Endpoint, type Flow } from '../../src/flow/index.js';

const endpoints: Endpoint[] = Array.from({ length: 200 }, (_, i) => Object.freeze({
  namespace: `ns-${i % 20}`, podName: `web-${i}-5d4f8c9b7-x${i}`, workloadKind: 'Deployment', workloadName: `web-${i}`,
  service: i % 3 === 0 ? `svc-${i}` : '', nodeName: 'node-0', zone: 'z1', labels: Object.freeze({ app: `web-${i}`, 'pod-template-hash': '5d4f8c9b7' }),
}));
const ipOf = (i: number): string => `10.0.${i >> 8}.${i & 255}`;
const byIp = new Map(endpoints.map((e, i) => [ipOf(i), e]));
export const lookup = { byIp: (ip: string): Endpoint | undefined => byIp.get(ip) };

/** A fresh batch of n flows (decoders make new Flow objects per record). */
export function batch(n: number, seq: number): Flow[] {
  const out: Flow[] = [];
  for (let i = 0; i < n; i++) {
    const k = seq + i;
    out.push(createFlow({
      srcIp: ipOf(k % 200), dstIp: ipOf((k * 7) % 200), verdict: k % 10 === 0 ? 'DROPPED' : 'FORWARDED', dropReason: k % 10 === 0 ? 'NETFILTER_DROP' : '',
      proto: k % 3 === 0 ? 17 : 6, srcPort: 30000 + (k % 20000), dstPort: 80, tcpFlags: 16, direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT', isReply: false, bytes: 100, timeMs: Date.now(),
    }));
  }
  return out;
}
