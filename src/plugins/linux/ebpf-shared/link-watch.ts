/**
 * Keeps a link watcher (links.ts) in step with the kernel's links without polling: the watcher's full
 * link dump runs at start, after each batch of RTM_NEWLINK/RTM_DELLINK notifications (the batches
 * of one event-loop turn make one dump), after an overrun (the kernel dropped notifications), and
 * every `resyncMs` as a backstop (which also retries a failed attach). A new pod's veth is attached
 * within a millisecond or so of its creation, so its first packets are seen. The dump stays the one
 * source of truth: events only say when to look, so lost, reordered or renamed links need no special
 * case.
 */
import { watchLinkEvents } from '../../../ffi/linux/index.js';
import type { Logger } from '../../../log/index.js';
import { every, type ResourceStack } from '../../../plugin/index.js';
import type { LinkWatcher } from './links.js';

export interface LinkWatchOptions {
  readonly resyncMs: number;
  readonly log: Logger;
  /** A dump or the event socket failed (the next event or resync tries again). */
  readonly onError: (e: unknown) => void;
}

export function followLinks(s: ResourceStack, watcher: Pick<LinkWatcher, 'poll'>, o: LinkWatchOptions): void {
  let pending: NodeJS.Immediate | undefined;
  let closed = false;
  const sync = (): void => {
    pending = undefined;
    if (closed) return;
    try {
      watcher.poll();
    } catch (e) {
      o.onError(e);
    }
  };
  // Subscribed before the first dump, so nothing created in between is missed.
  const events = s.use(
    watchLinkEvents({
      onBatch: (b) => {
        if (b.overrun) o.log.warn('link notifications overran; reading every link again', { overruns: events.stats.overruns });
        pending ??= setImmediate(sync);
      },
      onError: o.onError,
    }),
  );
  s.defer(() => {
    closed = true;
    if (pending) clearImmediate(pending);
  });
  sync();
  every(s, o.resyncMs, sync);
}
