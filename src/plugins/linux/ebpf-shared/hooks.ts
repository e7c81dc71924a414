/**
 * What every eBPF plugin does when a hook is missing (one log line naming the hook, then a
 * PermanentError) or only busy for now (EAGAIN, ENOMEM, EBUSY: a retryable error), and the
 * load-and-attach the tracepoint plugins share.
 */
import { enumKey, type KeySpec } from '../../../config/index.js';
import { attachBySection, openBpfObject, type BpfObject, type HookChoice } from '../../../ffi/linux/index.js';
import type { Logger } from '../../../log/index.js';
import { PermanentError, errMessage, retryableErrno, type PluginContext, type ResourceStack } from '../../../plugin/index.js';

/**
 * Runs `fn` (choose, load or attach for `hook`); a failure fails this plugin alone: permanently when
 * the hook is missing, with retries when the kernel said EAGAIN, ENOMEM or EBUSY.
 */
export function onHook<T>(log: Logger, hook: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    const transient = retryableErrno(e);
    if (transient !== undefined) {
      log.warn('eBPF hook not available now; will retry', { hook, errno: transient, error: errMessage(e) });
      throw new Error(`hook ${hook}: ${errMessage(e)}`, { cause: e });
    }
    log.error('eBPF hook unavailable', { hook, error: errMessage(e) });
    throw new PermanentError(`hook ${hook}: ${errMessage(e)}`, { cause: e });
  }
}

/** Ring-buffer size for event records: the configured size when pod-level flows are on, else one page. */
export function eventRingSize(podLevel: boolean, configured: number): number {
  return podLevel ? configured : 4096;
}

/**
 * Batched wake-ups for event rings: the programs wake the agent once this many bytes wait (rodata
 * `wakeup_bytes`) or when they have not woken it for 50 ms (retina.h), and after each wake-up the
 * agent drains again FOLLOW_UP_MS later (and again while records keep coming), so a record waits at
 * most about that long and an idle agent arms no timer. Fewer wake-ups, more records per drain (the
 * per-packet cost under load is the wake-up).
 */
export const FOLLOW_UP_MS = 100;
export function wakeupBytes(ringSize: number): number {
  return Math.max(0, Math.min(65536, Math.floor(ringSize / 8)));
}

/**
 * Loads a tracepoint plugin's object with the program `hook` picked, its event ring `podLevelRingSize`
 * bytes when pod-level records are on (one page otherwise), and attaches the program; both are
 * released with `s`. A ring costs twice its size in RSS (its data pages are mapped twice).
 * `rodata`: the plugin's own read-only variables, beside emit_events and wakeup_bytes.
 */
export function loadTracepointObject(
  s: ResourceStack, ctx: PluginContext<unknown>, name: string, hook: HookChoice, eventsMap: string, podLevelRingSize: number,
  rodata: Readonly<Record<string, number | boolean | bigint>> = {},
): BpfObject {
  const podLevel = ctx.flows !== undefined;
  const ringSize = eventRingSize(podLevel, podLevelRingSize);
  const obj = s.use(
    onHook(ctx.log, hook.label, () =>
      openBpfObject(name, {
        programs: [hook.program],
        attachTargets: { [hook.program]: hook.target },
        rodata: { ...rodata, emit_events: podLevel, wakeup_bytes: wakeupBytes(ringSize) },
        maxEntries: { [eventsMap]: ringSize },
      }),
    ),
  );
  s.use(onHook(ctx.log, hook.label, () => attachBySection(obj.program(hook.program), hook.label)));
  return obj;
}

/** How a plugin attaches its tc programs: tcx (Linux 6.6+, BPF links), clsact (tc filters), or auto. */
export type TcMode = 'auto' | 'tcx' | 'clsact';

/** A plugin's tc mode key (packetForwardTcMode, packetParserTcMode): one declaration, one wording. */
export function tcModeKey(key: string, plugin: string): KeySpec<TcMode> {
  return enumKey<TcMode>(
    key,
    'auto',
    ['auto', 'tcx', 'clsact'],
    `Ours: how ${plugin} attaches its tc programs: tcx (Linux 6.6+; detached by the kernel even if the agent is killed), clsact, or auto (tcx where the kernel has it).`,
  );
}
