/**
 * Where the plugin's events come from: the Microsoft-Windows-PktMon provider in an ETW real-time
 * session of ours, consumed in-process (src/ffi/windows/etw.ts). Tests pass another source.
 */
import { PKTMON_SESSION_NAME, consumeEtwSession, startEtwSession, type EtwEvent } from '../../../ffi/windows/index.js';

export const PKTMON_PROVIDER = '4D4F80D9-C8BD-4D73-BB5B-19C90402C5AC';
/** Our session's name: a session left by a crashed agent has it and is stopped at start. */
export const SESSION_NAME = PKTMON_SESSION_NAME;
/** Keywords: Config 0x1, Rundown 0x2, NblParsed 0x4, NblInfo 0x8, Payload 0x10 (events 160/170). */
export const PAYLOAD_KEYWORD = 0x10n;
const LEVEL_VERBOSE = 5;

export interface PktmonSource {
  /** Up to `max` events taken since the last call, oldest first. */
  drain(max: number): EtwEvent[];
  /** Events lost so far before JS could take them: the consumer queue was full, or ETW lost buffers. */
  lost(): number;
  /** Settles when the source has ended by itself (the session was stopped from outside) or was closed. */
  readonly ended: Promise<unknown>;
  close(): Promise<void>;
}

/** Starts the session, enables PktMon's payload events and consumes them through a queue of `capacity` events. */
export function openEtwSource(capacity: number): PktmonSource {
  const session = startEtwSession({ name: SESSION_NAME, provider: PKTMON_PROVIDER, level: LEVEL_VERBOSE, keywords: PAYLOAD_KEYWORD });
  let consumer;
  try {
    consumer = consumeEtwSession(SESSION_NAME, capacity);
  } catch (e) {
    session.stop();
    throw e;
  }
  const c = consumer;
  let sessionLost = 0;
  return {
    drain: (max) => c.drain(max),
    lost: () => {
      try {
        const l = session.losses();
        sessionLost = l.eventsLost + l.realTimeBuffersLost;
      } catch {
        // the session is gone (stopped): its last count stands
      }
      return c.dropped + sessionLost;
    },
    ended: c.done,
    close: async () => {
      c.close();
      session.stop();
      await c.done.catch(() => undefined);
    },
  };
}
