/**
 * What a plugin reports about links it could not attach to (packetparser's veths, dns's interfaces):
 * each one is a degraded source of the plugin (`<noun> <name>`, with the error: `veth lxc1`) in
 * /readyz, and a series of controlplane_networkobservability_interface_attach_failed{plugin,interface}
 * = 1. Both clear when the link attaches (a later retry) or is gone.
 */
import { catalog } from '../../../metrics/index.js';
import { errMessage, type PluginContext } from '../../../plugin/index.js';
import type { Link } from './links.js';

export interface AttachFailures {
  /** Wraps the watcher's attach: records a failure, clears it on success. */
  attach<H>(link: Link, attach: () => H): H;
  /** Clears the failures of links that are gone (`ifindexOf(name)` no longer gives their ifindex). */
  prune(ifindexOf: (name: string) => number): void;
  /** The links failing now. */
  readonly failing: ReadonlyMap<string, Link>;
}

export function createAttachFailures(ctx: PluginContext<unknown>, plugin: string, noun: string): AttachFailures {
  const failing = new Map<string, Link>();
  const gauge = ctx.metrics.gauge(catalog.interfaceAttachFailed);
  const source = (l: Link): string => `${noun} ${l.name}`;
  const clear = (key: string, l: Link): void => {
    failing.delete(key);
    gauge.remove({ plugin, interface: l.name });
    ctx.status.ok(source(l));
  };
  return {
    failing,
    attach(link, attach) {
      const key = `${link.name}#${link.ifindex}`;
      try {
        const h = attach();
        if (failing.has(key)) clear(key, link);
        return h;
      } catch (e) {
        if (!failing.has(key)) {
          failing.set(key, link);
          gauge.set({ plugin, interface: link.name }, 1);
          ctx.status.degraded(source(link), `cannot attach to ${link.name} (ifindex ${link.ifindex}): ${errMessage(e)}`);
        }
        throw e;
      }
    },
    prune(ifindexOf) {
      for (const [key, l] of failing) if (ifindexOf(l.name) !== l.ifindex) clear(key, l);
    },
  };
}
