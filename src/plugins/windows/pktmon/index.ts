/**
 * pktmon: pod-level flows from the Microsoft-Windows-PktMon ETW provider, consumed in-process
 * (Retina runs a helper, controller-pktmon.exe, instead). Packet and drop events (160/170) are
 * merged into one Flow per packet (merge.ts) with PktMon's drop-reason names; the bytes of dropped
 * packets also go to the node's drop_bytes. Events lost before they were decoded go to
 * lost_events_counter. Pod level only. See README.md.
 */
import type { Flow } from '../../../flow/index.js';
import { catalog } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, errMessage, every, type PluginContext, type PluginDefinition } from '../../../plugin/index.js';
import { OwnedSeries } from '../owned-series.js';
import { PacketMerger, type MergeStats } from './merge.js';
import { openEtwSource, type PktmonSource } from './source.js';

const { lostEventTypes } = catalog;

/** Events the consumer queue holds between drains; beyond it events are dropped and counted. */
export const QUEUE_CAPACITY = 65_536;
/** How often the queue is drained, and the most events one drain decodes. */
export const DRAIN_INTERVAL_MS = 50;
export const DRAIN_BATCH = 16_384;

const EMITS = [catalog.lostEventsCounter, catalog.parsedPacketsCounter, catalog.pktmonPackets, catalog.dropBytes] as const;
const OUTCOMES = ['settled', 'aged', 'evicted', 'dropped', 'late', 'nonIp'] as const;

/** Dropped bytes by (reason, direction) since start: the node's drop_bytes from PktMon. */
export class DropTotals {
  readonly #bytes = new Map<string, [Record<string, string>, number]>();

  add(flows: readonly Flow[]): void {
    for (const f of flows) {
      if (f.verdict !== 'DROPPED') continue;
      const direction = f.direction.toLowerCase();
      const key = `${f.dropReason}\u0000${direction}`;
      const row = this.#bytes.get(key);
      if (row) row[1] += f.bytes;
      else this.#bytes.set(key, [{ reason: f.dropReason, direction }, f.bytes]);
    }
  }

  rows(): Array<readonly [Readonly<Record<string, string>>, number]> {
    return [...this.#bytes.values()];
  }
}

function run(ctx: PluginContext<object>, open: () => PktmonSource): Promise<ResourceStack> {
  return ResourceStack.build((s) => {
    const src = open();
    s.defer(() => src.close());
    s.defer(() => ctx.metrics.reset([catalog.dropBytes]));
    const merger = new PacketMerger();
    const drops = new DropTotals();
    const dropBytes = new OwnedSeries(ctx.metrics.gauge(catalog.dropBytes));
    const packets = ctx.metrics.counter(catalog.pktmonPackets);
    let lostSeen = 0;
    const seen: MergeStats = { ...merger.stats };
    const report = (flows: Flow[]): void => {
      const st = merger.stats;
      if (st.appearances > seen.appearances) ctx.self.parsedPackets(st.appearances - seen.appearances);
      if (st.bad > seen.bad) ctx.self.lostEvents(lostEventTypes.parser, st.bad - seen.bad);
      for (const o of OUTCOMES) if (st[o] > seen[o]) packets.inc({ outcome: o === 'nonIp' ? 'non_ip' : o }, st[o] - seen[o]);
      Object.assign(seen, st);
      if (flows.length) {
        drops.add(flows);
        ctx.flows?.consume({ source: 'pktmon', flows });
      }
      dropBytes.replace(drops.rows());
    };
    const drain = (): void => {
      try {
        const flows: Flow[] = [];
        for (let i = 0; i < 8; i++) {
          const events = src.drain(DRAIN_BATCH);
          if (!events.length) break;
          merger.push(events, flows);
          if (events.length < DRAIN_BATCH) break;
        }
        merger.tick(flows);
        report(flows);
        const lost = src.lost();
        if (lost > lostSeen) ctx.self.lostEvents(lostEventTypes.kernel, lost - lostSeen);
        lostSeen = Math.max(lostSeen, lost);
        ctx.status.ok('events');
      } catch (e) {
        ctx.status.degraded('events', `pktmon drain failed: ${errMessage(e)}`);
      }
    };
    every(s, DRAIN_INTERVAL_MS, drain);
    s.defer(() => {
      drain();
      const flows: Flow[] = [];
      merger.flush(flows);
      report(flows);
    });
    void src.ended.then(
      () => { if (!ctx.signal.aborted) ctx.status.failed(new Error('the PktMon ETW session ended (stopped from outside?)')); },
      (e: unknown) => { if (!ctx.signal.aborted) ctx.status.failed(e); },
    );
    if (src.fallback) ctx.log.warn(src.fallback);
    ctx.log.info('PktMon ETW session consumed', { consumer: src.consumer ?? 'other', queueCapacity: QUEUE_CAPACITY });
  });
}

/** `open` replaces the ETW session (tests); the agent runs `pktmon`. */
export function createPktmonPlugin(open: () => PktmonSource = () => openEtwSource(QUEUE_CAPACITY)): PluginDefinition<object> {
  return definePlugin<object>({
    name: 'pktmon',
    os: 'windows',
    description: 'Pod-level flows (one per packet) and drops (PktMon drop reasons, drop_bytes) from the Microsoft-Windows-PktMon ETW provider, consumed in-process',
    defaultEnabled: false,
    podLevelOnly: true,
    config: {},
    hooks: [],
    emits: EMITS,
    start: (ctx) => run(ctx, open),
  });
}

export const pktmon = createPktmonPlugin();
