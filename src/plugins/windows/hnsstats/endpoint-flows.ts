/**
 * Per-endpoint flows for the pod level: each tick, what an endpoint's HNS counters moved since the
 * last tick becomes one Flow per direction and verdict, with the endpoint's IP as the pod side (the
 * Enricher maps it to the pod) and the unspecified address as the other side (HNS does not say who
 * the peer was). The first reading of an endpoint is its baseline; a counter that went down (the
 * endpoint was re-created under the same ID) counts from zero.
 */
import { createFlow, type Flow } from '../../../flow/index.js';
import type { EndpointStats } from '../../../ffi/windows/index.js';
import type { EndpointReading } from './node-sums.js';

const delta = (now: bigint, before: bigint): number => Number(now >= before ? now - before : now);

export class EndpointFlows {
  #last = new Map<string, EndpointStats>();

  /** The flows since the previous call; endpoints gone from `list` are forgotten. */
  next(list: readonly EndpointReading[], timeMs: number): Flow[] {
    const flows: Flow[] = [];
    const seen = new Map<string, EndpointStats>();
    for (const r of list) {
      seen.set(r.id, r.stats);
      const before = this.#last.get(r.id);
      if (!before) continue;
      const peer = r.ip.includes(':') ? '::' : '0.0.0.0';
      const add = (direction: 'INGRESS' | 'EGRESS', verdict: 'FORWARDED' | 'DROPPED', packets: number, bytes: number): void => {
        if (packets <= 0) return;
        const ingress = direction === 'INGRESS';
        flows.push(createFlow({
          timeMs, verdict, direction, packets, bytes, srcIp: ingress ? peer : r.ip, dstIp: ingress ? r.ip : peer,
          observationPoint: ingress ? 'TO_ENDPOINT' : 'FROM_ENDPOINT', ...(verdict === 'DROPPED' ? { dropReason: 'endpoint' } : {}),
        }));
      };
      const s = r.stats;
      add('INGRESS', 'FORWARDED', delta(s.packetsReceived, before.packetsReceived), delta(s.bytesReceived, before.bytesReceived));
      add('EGRESS', 'FORWARDED', delta(s.packetsSent, before.packetsSent), delta(s.bytesSent, before.bytesSent));
      add('INGRESS', 'DROPPED', delta(s.droppedIncoming, before.droppedIncoming), 0);
      add('EGRESS', 'DROPPED', delta(s.droppedOutgoing, before.droppedOutgoing), 0);
    }
    this.#last = seen;
    return flows;
  }
}
