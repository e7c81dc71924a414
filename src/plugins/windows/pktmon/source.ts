/**
 * Where the plugin's events come from: the Microsoft-Windows-PktMon provider in an ETW real-time
 * session of ours, consumed in-process. By default by the native consumer (native-windows/
 * retina-etw.dll through src/ffi/windows/etw-native.ts: ProcessTrace on its own thread, a ring in
 * native memory, one call per drain); when the library is not in the package, by the koffi callback
 * path (src/ffi/windows/etw.ts, one JS call per event, ~15 000 events/s at most), and the source
 * says so (`fallback`, logged by the plugin as a warning). Tests pass another source.
 */
import {
  PKTMON_SESSION_NAME, consumeEtwNative, consumeEtwSession, startEtwSession, type EtwEvent, type EtwSession, type NativeEtwStats, type SessionLosses,
} from '../../../ffi/windows/index.js';

export const PKTMON_PROVIDER = '4D4F80D9-C8BD-4D73-BB5B-19C90402C5AC';
/** Our session's name: a session left by a crashed agent has it and is stopped at start. */
export const SESSION_NAME = PKTMON_SESSION_NAME;
/** Keywords: Config 0x1, Rundown 0x2, NblParsed 0x4, NblInfo 0x8, Payload 0x10 (events 160/170). */
export const PAYLOAD_KEYWORD = 0x10n;
const LEVEL_VERBOSE = 5;
/**
 * The native consumer's ring (events wait there between drains: 32 MiB hold about 190 000 events of
 * a 128-byte capture, a second at 190 000 events/s, so a JS thread stalled that long loses nothing)
 * and the most one drain returns.
 */
export const NATIVE_RING_BYTES = 32 << 20;
export const NATIVE_DRAIN_BYTES = 4 << 20;

export interface PktmonSource {
  /** Up to `max` events taken since the last call, oldest first. */
  drain(max: number): EtwEvent[];
  /** Events lost so far before JS could take them: the consumer's queue or ring was full, or ETW lost them in the session. */
  lost(): number;
  /** Settles when the source has ended by itself (the session was stopped from outside) or was closed. */
  readonly ended: Promise<unknown>;
  close(): Promise<void>;
  /** Which consumer runs: `native` (retina-etw.dll) or `callback` (koffi, one call per event). */
  readonly consumer?: 'native' | 'callback';
  /** Why the callback path runs although the native consumer was asked for (missing library). */
  readonly fallback?: string;
}

export interface EtwSourceOptions {
  /** `native` (fails without the library), `callback`, or `auto` (native, else callback with `fallback` set). Default `auto`. */
  readonly consumer?: 'native' | 'callback' | 'auto';
  /** The callback path's queue, in events. */
  readonly capacity: number;
  readonly ringBytes?: number;
  readonly drainBytes?: number;
}

/**
 * Events ETW lost in the session, as events: EventsLost (events that found no free buffer) plus,
 * for each real-time buffer lost (RealTimeBuffersLost counts buffers, and ETW reports no event
 * count for them), the events a delivered buffer held on average when the loss was seen
 * (`perBuffer`, from the native consumer's BufferCallback count; a loss seen before any buffer was
 * delivered waits for the first one).
 */
export function sessionLossTracker(): (l: SessionLosses, perBuffer: number) => number {
  let buffersSeen = 0;
  let bufferEvents = 0;
  return (l, perBuffer) => {
    // before the first delivered buffer there is no measure yet: the buffers are counted at the next call
    if (l.realTimeBuffersLost > buffersSeen && perBuffer > 0) {
      bufferEvents += (l.realTimeBuffersLost - buffersSeen) * Math.max(1, Math.round(perBuffer));
      buffersSeen = l.realTimeBuffersLost;
    }
    return l.eventsLost + bufferEvents;
  };
}

/** The events a delivered buffer held, on average (0 before the first buffer). */
export function eventsPerBuffer(s: Pick<NativeEtwStats, 'buffers' | 'bufferEvents'>): number {
  return s.buffers ? s.bufferEvents / s.buffers : 0;
}

/** The library is missing, does not load or is of another version: the cases `auto` falls back on. */
function missingLibrary(e: unknown): boolean {
  return e instanceof Error && /native ETW consumer/.test(e.message);
}

/** Starts the session, enables PktMon's payload events and consumes them (see EtwSourceOptions). */
export function openEtwSource(options: number | EtwSourceOptions): PktmonSource {
  const opts: EtwSourceOptions = typeof options === 'number' ? { capacity: options } : options;
  const session = startEtwSession({ name: SESSION_NAME, provider: PKTMON_PROVIDER, level: LEVEL_VERBOSE, keywords: PAYLOAD_KEYWORD });
  try {
    const mode = opts.consumer ?? 'auto';
    if (mode === 'callback') return callbackSource(session, opts.capacity);
    try {
      return nativeSource(session, opts);
    } catch (e) {
      if (mode === 'native' || !missingLibrary(e)) throw e;
      const fallback = `${(e as Error).message}: PktMon events go through the koffi callback path instead (one JS call per event, about 15 000 events/s at most; beyond that they are lost and counted)`;
      return { ...callbackSource(session, opts.capacity), fallback };
    }
  } catch (e) {
    session.stop();
    throw e;
  }
}

function queryLosses(session: EtwSession): SessionLosses | undefined {
  try {
    return session.losses();
  } catch {
    return undefined; // the session is gone (stopped): its last count stands
  }
}

function nativeSource(session: EtwSession, opts: EtwSourceOptions): PktmonSource {
  const c = consumeEtwNative({ session: SESSION_NAME, provider: PKTMON_PROVIDER, ringBytes: opts.ringBytes ?? NATIVE_RING_BYTES, drainBytes: opts.drainBytes ?? NATIVE_DRAIN_BYTES });
  const sessionLost = sessionLossTracker();
  let lastSession = 0;
  let endedBy: (v: unknown) => void = () => undefined;
  const ended = new Promise<unknown>((resolve) => { endedBy = resolve; });
  let closed: Promise<void> | undefined;
  const check = (s: NativeEtwStats): NativeEtwStats => {
    if (s.done) endedBy(s.processRc);
    return s;
  };
  return {
    consumer: 'native',
    drain: (max) => {
      const events = c.drain(max);
      if (!events.length) check(c.stats());
      return events;
    },
    lost: () => {
      const s = check(c.stats());
      const l = queryLosses(session);
      if (l) lastSession = sessionLost(l, eventsPerBuffer(s));
      return s.overflow + lastSession;
    },
    ended,
    close: () => {
      closed ??= (async () => {
        try {
          endedBy(c.close().processRc);
        } finally {
          session.stop();
        }
      })();
      return closed;
    },
  };
}

function callbackSource(session: EtwSession, capacity: number): PktmonSource {
  const c = consumeEtwSession(SESSION_NAME, capacity);
  let sessionLost = 0;
  return {
    consumer: 'callback',
    drain: (max) => c.drain(max),
    lost: () => {
      const l = queryLosses(session);
      // one per lost buffer: this path has no count of events per buffer
      if (l) sessionLost = l.eventsLost + l.realTimeBuffersLost;
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
