/**
 * The Enricher: fills each flow's source and destination endpoint (pod, namespace, workload,
 * service, node, zone) from an IP lookup, IPv4 and IPv6 alike, then hands the batch on. It is the
 * only stage that mutates flows. `cacheLookup` (cache-lookup.ts) is the lookup over the agent's IP
 * cache: one Map read per address, no allocation per flow.
 */
import type { Flow, FlowBatch, FlowConsumer } from '../flow/index.js';
import type { EndpointLookup } from './cache-lookup.js';

export { cacheLookup, selectorMatches, type CacheLookupOptions, type EndpointLookup } from './cache-lookup.js';

export interface EnricherStats {
  readonly flows: number;
  readonly enrichedSides: number;
}

export interface Enricher extends FlowConsumer {
  stats(): EnricherStats;
}

export function createEnricher(lookup: EndpointLookup, next: FlowConsumer): Enricher {
  let flows = 0;
  let enriched = 0;
  return {
    consume(batch: FlowBatch): void {
      const fs = batch.flows;
      for (let i = 0; i < fs.length; i++) {
        const f = fs[i] as Flow;
        const s = lookup.byIp(f.srcIp);
        const d = lookup.byIp(f.dstIp);
        f.source = s;
        f.destination = d;
        if (s !== undefined) enriched++;
        if (d !== undefined) enriched++;
      }
      flows += fs.length;
      next.consume(batch);
    },
    stats: () => ({ flows, enrichedSides: enriched }),
  };
}
