/**
 * pktmon: pod-level flows from the Microsoft-Windows-PktMon ETW provider, consumed in-process
 * (Retina runs a helper, controller-pktmon.exe, instead). Packet and drop events (160/170) become
 * Flows with PktMon's drop-reason names; events lost before they were decoded go to
 * lost_events_counter. Pod level only. See README.md.
 */
import type { Flow } from '../../../flow/index.js';
import { catalog } from '../../../metrics/index.js';

const { lostEventTypes } = catalog;
import { ResourceStack, definePlugin, errMessage, every, type PluginContext, type PluginDefinition } from '../../../plugin/index.js';
import { decodeFrameEvent, EVENT_FRAME, EVENT_FRAME_DROP } from './decode.js';
import { openEtwSource, type PktmonSource } from './source.js';

/** Events the consumer queue holds between drains; beyond it events are dropped and counted. */
export const QUEUE_CAPACITY = 65_536;
/** How often the queue is drained, and the most events one drain decodes. */
export const DRAIN_INTERVAL_MS = 50;
export const DRAIN_BATCH = 16_384;

const EMITS = [catalog.lostEventsCounter, catalog.parsedPacketsCounter] as const;

/** Decodes one batch; returns the flows and how many records could not be decoded. */
export function decodeBatch(events: ReturnType<PktmonSource['drain']>): { flows: Flow[]; bad: number; parsed: number } {
  const flows: Flow[] = [];
  let bad = 0;
  let parsed = 0;
  for (const e of events) {
    if (e.id !== EVENT_FRAME && e.id !== EVENT_FRAME_DROP) continue;
    try {
      parsed++;
      const f = decodeFrameEvent(e.id, e.timestamp, e.data);
      if (f) flows.push(f);
    } catch {
      bad++;
    }
  }
  return { flows, bad, parsed };
}

function run(ctx: PluginContext<object>, open: () => PktmonSource): Promise<ResourceStack> {
  return ResourceStack.build((s) => {
    const src = open();
    s.defer(() => src.close());
    let lostSeen = 0;
    const drain = (): void => {
      try {
        for (let i = 0; i < 8; i++) {
          const events = src.drain(DRAIN_BATCH);
          if (!events.length) break;
          const { flows, bad, parsed } = decodeBatch(events);
          if (parsed) ctx.self.parsedPackets(parsed);
          if (bad) {
            ctx.self.lostEvents(lostEventTypes.parser, bad);
          }
          if (flows.length) ctx.flows?.consume({ source: 'pktmon', flows });
          if (events.length < DRAIN_BATCH) break;
        }
        const lost = src.lost();
        if (lost > lostSeen) ctx.self.lostEvents(lostEventTypes.kernel, lost - lostSeen);
        lostSeen = Math.max(lostSeen, lost);
        ctx.status.ok('events');
      } catch (e) {
        ctx.status.degraded('events', `pktmon drain failed: ${errMessage(e)}`);
      }
    };
    every(s, DRAIN_INTERVAL_MS, drain);
    s.defer(() => drain());
    void src.ended.then(
      () => { if (!ctx.signal.aborted) ctx.status.failed(new Error('the PktMon ETW session ended (stopped from outside?)')); },
      (e: unknown) => { if (!ctx.signal.aborted) ctx.status.failed(e); },
    );
    ctx.log.info('PktMon ETW session consumed', { queueCapacity: QUEUE_CAPACITY });
  });
}

/** `open` replaces the ETW session (tests); the agent runs `pktmon`. */
export function createPktmonPlugin(open: () => PktmonSource = () => openEtwSource(QUEUE_CAPACITY)): PluginDefinition<object> {
  return definePlugin<object>({
    name: 'pktmon',
    os: 'windows',
    description: 'Pod-level flows and drops (PktMon drop reasons) from the Microsoft-Windows-PktMon ETW provider, consumed in-process',
    defaultEnabled: false,
    podLevelOnly: true,
    config: {},
    hooks: [],
    emits: EMITS,
    start: (ctx) => run(ctx, open),
  });
}

export const pktmon = createPktmonPlugin();
