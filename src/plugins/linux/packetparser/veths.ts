/**
 * The endpoint watcher: finds the host ends of pod veths in this network namespace as they come and
 * go, and attaches the endpoint programs to each (link-watch.ts says when to look). Each poll is one netlink link dump (every
 * interface with its ifindex and kind, in a few recv calls), so a steady node with hundreds of pods
 * costs about a millisecond a poll. Interfaces are keyed by name and ifindex: a veth deleted and
 * created again under the same name is attached afresh. A vanished veth took its filters with it;
 * detaching tolerates that.
 */
import type { Logger } from '../../../log/index.js';
import { errMessage } from '../../../plugin/index.js';

export interface Link {
  readonly name: string;
  readonly ifindex: number;
}

export interface VethWatcherDeps {
  /** Every interface of this namespace with its kind ('veth' for the ones we want). */
  readonly links: () => readonly (Link & { readonly kind: string })[];
  /** Attaches the endpoint programs; the handle detaches them. May throw. */
  readonly attach: (link: Link) => Disposable & { readonly mode: string };
  /** Names never treated as endpoints (the host interfaces). */
  readonly exclude: ReadonlySet<string>;
  readonly log: Logger;
}

export interface VethWatcher extends Disposable {
  /** One pass: attach new veths, detach gone ones. */
  poll(): void;
  /** The veths attached now. */
  attached(): Link[];
}

export function createVethWatcher(d: VethWatcherDeps): VethWatcher {
  const attached = new Map<string, { link: Link; handle: Disposable }>();
  /** Keys whose attach failed (logged once, retried every poll while the veth is there). */
  const failed = new Set<string>();
  let closed = false;
  const detach = (key: string, why: string): void => {
    const a = attached.get(key);
    if (!a) return;
    attached.delete(key);
    try {
      a.handle[Symbol.dispose]();
      d.log.info('endpoint detached', { interface: a.link.name, ifindex: a.link.ifindex, why });
    } catch (e) {
      d.log.warn('endpoint detach failed', { interface: a.link.name, ifindex: a.link.ifindex, error: errMessage(e) });
    }
  };
  return {
    poll() {
      if (closed) return;
      const present = new Map<string, Link>();
      for (const l of d.links()) {
        if (l.kind !== 'veth' || l.ifindex <= 0 || d.exclude.has(l.name)) continue;
        present.set(`${l.name}#${l.ifindex}`, { name: l.name, ifindex: l.ifindex });
      }
      for (const key of [...attached.keys()]) if (!present.has(key)) detach(key, 'gone');
      for (const key of failed) if (!present.has(key)) failed.delete(key);
      for (const [key, link] of present) {
        if (attached.has(key)) continue;
        try {
          const handle = d.attach(link);
          attached.set(key, { link, handle });
          failed.delete(key);
          d.log.info('endpoint attached', { interface: link.name, ifindex: link.ifindex, mode: handle.mode });
        } catch (e) {
          // Retried on the next poll (the veth may be going away); logged once per interface.
          if (!failed.has(key)) d.log.warn('endpoint attach failed', { interface: link.name, ifindex: link.ifindex, error: errMessage(e) });
          failed.add(key);
        }
      }
    },
    attached: () => [...attached.values()].map((a) => a.link),
    [Symbol.dispose]() {
      closed = true;
      for (const key of [...attached.keys()]) detach(key, 'stopping');
    },
  };
}
