/**
 * Shared by the export benches (export.bench.ts, otlp.bench.ts): the enriched flows they export
 * (200 pods in 20 namespaces, 10 % DROPPED), the median, and the paced producer their CPU-at-a-rate
 * figures come from.
 */
import { createFlow, type Endpoint, type Flow } from '../../src/flow/index.js';

const endpoints: Endpoint[] = Array.from({ length: 200 }, (_, i) => Object.freeze({
  namespace: `ns-${i % 20}`, podName: `web-${i}-5d4f8c9b7-x${i}`, workloadKind: 'Deployment', workloadName: `web-${i}`,
  service: i % 3 === 0 ? `svc-${i}` : '', nodeName: 'node-0', zone: 'z1', labels: Object.freeze({ app: `web-${i}`, 'pod-template-hash': '5d4f8c9b7' }),
}));
const ipOf = (i: number): string => `10.0.${i >> 8}.${i & 255}`;

/** A fresh batch of n enriched flows, as the enricher hands them on. */
export function batch(n: number, seq: number): Flow[] {
  const out: Flow[] = [];
  for (let i = 0; i < n; i++) {
    const k = seq + i;
    const drop = k % 10 === 0;
    out.push(createFlow({
      srcIp: ipOf(k % 200), dstIp: ipOf((k * 7) % 200), verdict: drop ? 'DROPPED' : 'FORWARDED', dropReason: drop ? 'NETFILTER_DROP' : '',
      proto: k % 3 === 0 ? 17 : 6, srcPort: 30000 + (k % 20000), dstPort: 80, tcpFlags: 16, direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT',
      isReply: false, bytes: 100, timeMs: Date.now(), source: endpoints[k % 200], destination: endpoints[(k * 7) % 200],
    }));
  }
  return out;
}

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** Paced production at `rate` flows/s for `seconds`; CPU % (one core = 100) of the whole process. */
export async function paced(rate: number, seconds: number, consume: (flows: Flow[]) => void): Promise<{ cpuPct: number; flows: number; wallS: number }> {
  const tickMs = 10;
  const perTick = Math.round((rate * tickMs) / 1000);
  let seq = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let next = t0;
  while (performance.now() < end) {
    consume(batch(perTick, seq));
    seq += perTick;
    next += tickMs;
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  const wallS = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { cpuPct: ((c.user + c.system) / 1e6 / wallS) * 100, flows: seq, wallS };
}
