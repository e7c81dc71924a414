/**
 * API-server latency from packet records: a request leaving the node for the API server (TSval v)
 * is matched by the API server's reply that echoes it (TSecr v); a SYN by its SYN-ACK. Latency is
 * the difference of the two full timestamps, so it is right across second boundaries (Retina
 * subtracts only the sub-second parts). Requests with no reply within `ttlMs` are counted as
 * `adv_node_apiserver_no_response`. Only SYN and PSH segments are tracked: a bare ACK gets no reply.
 */
import type { Flow, FlowBatch, FlowConsumer } from '../../flow/index.js';
import { advNodeApiserverLatency, advNodeApiserverNoResponse, advNodeApiserverTcpHandshakeLatency } from '../catalog.js';
import type { MetricWriters } from '../registry.js';

const SYN = 0x02, ACK = 0x10, PSH = 0x08;

export interface ApiServerLatencyOptions {
  readonly metrics: MetricWriters;
  /** True for the API server's addresses (service IP, endpoints, resolved host). */
  readonly isApiServer: (ip: string) => boolean;
  readonly ttlMs?: number;
  readonly maxPending?: number;
  readonly now?: () => number;
}

export interface ApiServerLatency extends FlowConsumer {
  /** Counts and forgets requests older than the TTL (also done as flows arrive). */
  expire(): void;
  pending(): number;
}

export function createApiServerLatency(o: ApiServerLatencyOptions): ApiServerLatency {
  const ttl = o.ttlMs ?? 500;
  const max = o.maxPending ?? 100_000;
  const now = o.now ?? Date.now;
  const rtt = o.metrics.histogram(advNodeApiserverLatency);
  const handshake = o.metrics.histogram(advNodeApiserverTcpHandshakeLatency);
  const noResponse = o.metrics.counter(advNodeApiserverNoResponse);
  // Insertion-ordered, so the oldest entries come first when expiring.
  const requests = new Map<string, number>();
  const syns = new Map<string, number>();
  let lastExpire = 0;

  function expire(): void {
    const cutoff = now() - ttl;
    let lost = 0;
    for (const m of [requests, syns]) {
      for (const [k, t] of m) {
        if (t >= cutoff) break;
        m.delete(k);
        lost++;
      }
    }
    if (lost) noResponse.inc({ no_response: 'no_response' }, lost);
  }

  function remember(m: Map<string, number>, key: string, t: number): void {
    if (m.has(key)) return; // a retransmission keeps the first send time
    if (m.size >= max) {
      const oldest = m.keys().next().value as string;
      m.delete(oldest);
      noResponse.inc({ no_response: 'no_response' });
    }
    m.set(key, t);
  }

  function one(f: Readonly<Flow>): void {
    if (f.proto !== 6) return;
    const fl = f.tcpFlags;
    if (o.isApiServer(f.dstIp) && (f.direction === 'EGRESS' || f.observationPoint === 'TO_NETWORK' || f.observationPoint === 'TO_STACK')) {
      const conn = `${f.srcIp}|${f.srcPort}|${f.dstIp}|${f.dstPort}`;
      if (fl & SYN && !(fl & ACK)) remember(syns, conn, f.timeMs);
      else if (fl & PSH && f.tcpTsval) remember(requests, `${conn}|${f.tcpTsval}`, f.timeMs);
    } else if (o.isApiServer(f.srcIp)) {
      const conn = `${f.dstIp}|${f.dstPort}|${f.srcIp}|${f.srcPort}`;
      if (fl & SYN && fl & ACK) {
        const t = syns.get(conn);
        if (t !== undefined) {
          syns.delete(conn);
          handshake.observe(Math.max(0, f.timeMs - t));
        }
      } else if (f.tcpTsecr) {
        const key = `${conn}|${f.tcpTsecr}`;
        const t = requests.get(key);
        if (t !== undefined) {
          requests.delete(key);
          rtt.observe(Math.max(0, f.timeMs - t));
        }
      }
    }
  }

  return {
    consume(batch: FlowBatch): void {
      for (const f of batch.flows) one(f);
      const t = now();
      if (t - lastExpire >= ttl / 2) {
        lastExpire = t;
        expire();
      }
    },
    expire,
    pending: () => requests.size + syns.size,
  };
}
