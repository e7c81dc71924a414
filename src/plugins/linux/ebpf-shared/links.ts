/**
 * The link watcher: finds the interfaces of this network namespace a plugin hooks (packetparser: the
 * host ends of pod veths; dns: every interface but lo and bridge ports) as they come and go, and attaches the plugin's
 * tc programs to each (link-watch.ts says when to look). Each poll is one netlink link dump (every
 * interface with its ifindex and kind, in a few recv calls), so a steady node with hundreds of pods
 * costs about a millisecond a poll. A link that is no longer chosen (dns: a veth that became a bridge
 * port) is detached as one that went. Interfaces are keyed by name and ifindex: a link deleted and
 * created again under the same name is attached afresh. A vanished link took its filters with it;
 * detaching tolerates that.
 */
import type { Logger } from '../../../log/index.js';
import { errMessage } from '../../../plugin/index.js';

export interface Link {
  readonly name: string;
  readonly ifindex: number;
}

/** A link with its kind and, when enslaved (a bridge port, a bond's slave), its master's ifindex. */
export type KindedLink = Link & { readonly kind: string; readonly master?: number };

export interface LinkWatcherDeps {
  /** Every interface of this namespace with its kind ('veth', 'bridge', '' for lo and devices without one). */
  readonly links: () => readonly KindedLink[];
  /** The links of a dump to attach to (the whole dump, for choices that depend on other links: a bridge's ports). */
  readonly choose: (all: readonly KindedLink[]) => readonly KindedLink[];
  /** Attaches the plugin's programs; the handle detaches them. May throw. */
  readonly attach: (link: Link) => Disposable & { readonly mode: string };
  /** What the log lines call a link: "endpoint" gives `endpoint attached`, `endpoint detached`, `endpoint attach failed`. */
  readonly noun: string;
  readonly log: Logger;
}

export interface LinkWatcher extends Disposable {
  /** One pass: attach new links, detach gone ones. */
  poll(): void;
  /** The links attached now. */
  attached(): Link[];
}

export function createLinkWatcher(d: LinkWatcherDeps): LinkWatcher {
  const attached = new Map<string, { link: Link; handle: Disposable }>();
  /** Keys whose attach failed (logged once, retried every poll while the link is there). */
  const failed = new Set<string>();
  let closed = false;
  const detach = (key: string, why: string): void => {
    const a = attached.get(key);
    if (!a) return;
    attached.delete(key);
    try {
      a.handle[Symbol.dispose]();
      d.log.info(`${d.noun} detached`, { interface: a.link.name, ifindex: a.link.ifindex, why });
    } catch (e) {
      d.log.warn(`${d.noun} detach failed`, { interface: a.link.name, ifindex: a.link.ifindex, error: errMessage(e) });
    }
  };
  return {
    poll() {
      if (closed) return;
      const present = new Map<string, Link>();
      const all = d.links();
      const seen = new Set(all.map((l) => `${l.name}#${l.ifindex}`));
      for (const l of d.choose(all)) if (l.ifindex > 0) present.set(`${l.name}#${l.ifindex}`, { name: l.name, ifindex: l.ifindex });
      for (const key of [...attached.keys()]) if (!present.has(key)) detach(key, seen.has(key) ? 'no longer chosen' : 'gone');
      for (const key of failed) if (!present.has(key)) failed.delete(key);
      for (const [key, link] of present) {
        if (attached.has(key)) continue;
        try {
          const handle = d.attach(link);
          attached.set(key, { link, handle });
          failed.delete(key);
          d.log.info(`${d.noun} attached`, { interface: link.name, ifindex: link.ifindex, mode: handle.mode });
        } catch (e) {
          // Retried on the next poll (the link may be going away); logged once per interface.
          if (!failed.has(key)) d.log.warn(`${d.noun} attach failed`, { interface: link.name, ifindex: link.ifindex, error: errMessage(e) });
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
