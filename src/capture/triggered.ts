/**
 * A triggered capture on one node: the OS's capture tool streams every packet into the pre-trigger
 * ring (ring.ts) while the trigger is armed on the node's agent (trigger-hubble.ts); the first
 * matching flow cuts the ring at its packet, and packets are written for postTriggerDuration more.
 * Armed for CAPTURE_DURATION: without a trigger by then nothing is written (manifest `fired: false`).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/index.js';
import type { WorkloadEnv } from './env.js';
import { CaptureError, type CaptureCounts, type CaptureProvider } from './provider.js';
import { TriggeredPcap, type TriggerCut } from './ring.js';
import type { TriggerFlow, TriggerSource } from './trigger-hubble.js';
import type { ResolvedTrigger } from './trigger.js';

/** The ring's buffer never exceeds this (nor CAPTURE_MAX_SIZE): the capture container's memory limit is 300 MiB. */
export const RING_MAX_BYTES = 64 << 20;
/** How late a trigger may come after its packet and still find the pre-trigger window whole. */
export const TRIGGER_SLACK_MS = 5_000;
const MB = 1_000_000;

export type TriggeredStopReason = 'postTrigger' | 'notTriggered' | 'maxSize' | 'signal' | 'toolEnded';

/** manifest.json's `trigger`. */
export interface ManifestTrigger {
  readonly spec: ResolvedTrigger;
  readonly armedAt: string;
  readonly fired: boolean;
  readonly flow?: TriggerFlow;
  /** When the workload got the flow and began writing the file. */
  readonly triggeredAt?: string;
  /** From the drop (the flow's time, the agent's clock of the kernel event) to the capture starting (triggeredAt). */
  readonly dropToCaptureMs?: number;
  /** From the trigger's packet as captured here (its pcap time) to the capture starting. */
  readonly packetToCaptureMs?: number;
  readonly cut?: TriggerCut;
  /** Packets written after the trigger's packet. */
  readonly postTriggerPackets?: number;
  /** Packets the ring let go before the trigger (older than the window, or over its size). */
  readonly ringDropped: number;
  readonly ringBytes: number;
}

export interface TriggeredResult {
  readonly startedAt: Date;
  readonly stoppedAt: Date;
  readonly stopReason: TriggeredStopReason;
  readonly counts: CaptureCounts;
  readonly trigger: ManifestTrigger;
  readonly failures: readonly string[];
}

export interface TriggeredDeps {
  readonly provider: CaptureProvider;
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly now: () => Date;
  /** Arms the trigger on the node's agent (hubbleTrigger; tests hand in their own). */
  readonly trigger: (t: ResolvedTrigger) => TriggerSource;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> => new Promise((r) => {
  const t = setTimeout(r, ms);
  signal.addEventListener('abort', () => {
    clearTimeout(t);
    r();
  }, { once: true });
});

export async function captureTriggered(env: WorkloadEnv, deps: TriggeredDeps, dir: string, base: string, logFile: string): Promise<TriggeredResult> {
  const t = env.trigger as ResolvedTrigger;
  const { provider, log } = deps;
  if (!provider.startStream) throw new CaptureError(`triggered captures (CAPTURE_TRIGGER) are not supported on ${provider.os} nodes`);
  const maxBytes = env.maxSizeMb * MB;
  const ringBytes = Math.min(maxBytes, RING_MAX_BYTES);
  let out: WriteStream | undefined;
  let written = 0;
  const full = new AbortController();
  const ring = new TriggeredPcap({ packets: t.preTrigger.packets, durationMs: t.preTrigger.durationMs, maxBytes: ringBytes, slackMs: TRIGGER_SLACK_MS }, (b) => {
    if (written + b.length > maxBytes) {
      full.abort();
      return;
    }
    out ??= createWriteStream(join(dir, `${base}.pcap`));
    out.write(b);
    written += b.length;
  });
  const failures: string[] = [];
  const cap = await provider.startStream(env, { logFile, log });
  let streamError: Error | undefined;
  const streamEnd = new Promise<void>((r) => {
    cap.packets.on('end', r);
    cap.packets.on('error', (e: Error) => {
      streamError = e;
      r();
    });
  });
  cap.packets.on('data', (c: Buffer) => {
    if (streamError) return;
    try {
      ring.feed(c);
    } catch (e) {
      streamError = e as Error;
    }
  });
  const source = deps.trigger(t);
  const stop = new AbortController();
  const wake = AbortSignal.any([stop.signal, deps.signal]);
  type Why = { reason: TriggeredStopReason; detail?: string };
  const signalled = new Promise<Why>((r) => (deps.signal.aborted ? r({ reason: 'signal' }) : deps.signal.addEventListener('abort', () => r({ reason: 'signal' }), { once: true })));
  const toolEnded = cap.ended.then((detail): Why => ({ reason: 'toolEnded', detail }));
  let why: Why;
  let fired: Awaited<TriggerSource['fired']> | undefined;
  let armedAt = deps.now();
  let counts: CaptureCounts = { packets: null, dropped: null };
  try {
    const arm = await Promise.race([source.armed.then((): Why | undefined => undefined), signalled, toolEnded]);
    if (arm) why = arm;
    else {
      armedAt = deps.now();
      log.info('capturing', { base, armedForMs: env.durationMs, trigger: t });
      const first = await Promise.race([
        source.fired.then((f): Why | undefined => {
          fired = f;
          return undefined;
        }),
        sleep(env.durationMs, wake).then((): Why => ({ reason: 'notTriggered' })),
        signalled, toolEnded,
      ]);
      if (first) why = first;
      else {
        const f = fired as NonNullable<typeof fired>;
        ring.trigger(f.point);
        log.info('trigger fired', { flow: f.flow, dropToCaptureMs: Math.round(f.seenAtMs - f.flow.timeMs), postTriggerMs: t.postTriggerMs });
        why = await Promise.race([
          sleep(t.postTriggerMs, wake).then((): Why => ({ reason: 'postTrigger' })),
          new Promise<Why>((r) => full.signal.addEventListener('abort', () => r({ reason: 'maxSize' }), { once: true })),
          signalled, toolEnded,
        ]);
      }
    }
  } catch (e) {
    if (!(e instanceof CaptureError)) throw e;
    failures.push(e.message);
    why = { reason: 'toolEnded', detail: e.message };
  } finally {
    stop.abort();
    source.close();
    try {
      counts = await cap.stop();
    } catch (e) {
      failures.push((e as Error).message);
    }
    await streamEnd;
    ring.finish();
    if (out) await new Promise<void>((r) => (out as WriteStream).end(r));
  }
  if (why.reason === 'toolEnded' && !failures.length) failures.push(why.detail ?? 'the capture tool ended by itself');
  if (streamError) failures.push(`the capture stream: ${streamError.message}`);
  const stoppedAt = deps.now();
  const cut = ring.cut;
  const trigger: ManifestTrigger = {
    spec: t, armedAt: armedAt.toISOString(), fired: fired !== undefined, ringDropped: ring.counts.evicted, ringBytes,
    ...(fired ? {
      flow: fired.flow, triggeredAt: new Date(fired.seenAtMs).toISOString(), dropToCaptureMs: round(fired.seenAtMs - fired.flow.timeMs),
      ...(cut?.triggerPacketTimeMs !== undefined ? { packetToCaptureMs: round(fired.seenAtMs - cut.triggerPacketTimeMs) } : {}),
      ...(cut ? { cut, postTriggerPackets: ring.counts.written - cut.preTriggerPackets - (cut.triggerPacketIndex >= 0 ? 1 : 0) } : {}),
    } : {}),
  };
  log.info('triggered capture stopped', { reason: why.reason, fired: trigger.fired, written: ring.counts.written, cut });
  return { startedAt: armedAt, stoppedAt, stopReason: why.reason, counts: { packets: ring.counts.written, dropped: counts.dropped }, trigger, failures };
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
