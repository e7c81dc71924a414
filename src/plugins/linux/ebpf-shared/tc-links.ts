/**
 * tc programs on links that come and go, for the plugins that follow them (packetparser on pod veths,
 * dns on every interface): `attachTcPrograms` attaches one plugin's programs to one link (all or none),
 * `watchLinks` keeps them on the links `choose` picks, following link notifications (link-watch.ts),
 * reports the links that would not attach (attach-status.ts) and looks again every `retryMs` while
 * any fails (a link whose obstacle goes gets no notification).
 */
import { attachTcAuto, loadSys, type BpfObject, type HookChoice, type TcAttachment } from '../../../ffi/linux/index.js';
import { catalog } from '../../../metrics/index.js';
import { errMessage, type PluginContext, type ResourceStack } from '../../../plugin/index.js';
import { createAttachFailures } from './attach-status.js';
import type { TcMode } from './hooks.js';
import { followLinks } from './link-watch.js';
import { createLinkWatcher, type KindedLink, type Link, type LinkWatcher } from './links.js';

/** Attaches each tc program of `choices` (target: ingress | egress) to `ifindex`; on a failure none stays, and the error starts with `what`. */
export function attachTcPrograms(ctx: PluginContext<unknown>, obj: BpfObject, choices: readonly HookChoice[], ifindex: number, what: string, mode: TcMode): Disposable & { mode: string } {
  const held: TcAttachment[] = [];
  try {
    for (const c of choices) held.push(attachTcAuto(obj.program(c.program), ifindex, c.target === 'ingress' ? 'ingress' : 'egress', mode));
    const stale = held.reduce((n, h) => n + h.staleRemoved, 0);
    if (stale) ctx.log.info('stale tc filters of an earlier run removed', { interface: what, count: stale });
  } catch (e) {
    for (const h of held.reverse()) h[Symbol.dispose]();
    throw new Error(`${what}: ${errMessage(e)}`, { cause: e });
  }
  return {
    mode: held.map((h) => h.mode).join(','),
    [Symbol.dispose]() {
      const errors: string[] = [];
      for (const h of held.reverse()) {
        try {
          h[Symbol.dispose]();
        } catch (e) {
          errors.push(errMessage(e));
        }
      }
      if (errors.length) throw new Error(errors.join('; '));
    },
  };
}

export interface WatchLinksOptions {
  /** The plugin, as interface_attach_failed's `plugin` label. */
  readonly plugin: string;
  /** What a link is called in log lines ("endpoint": `endpoint attached`). */
  readonly noun: string;
  /** What a link is called in /readyz's degraded sources ("veth": `veth lxc1`). */
  readonly source: string;
  /** The status source of the watcher itself ("endpoint watcher"). */
  readonly watcher: string;
  /** Every link of the namespace now (a LinkDumper's dump, which the plugin may use for more). */
  readonly links: () => readonly KindedLink[];
  readonly choose: (all: readonly KindedLink[]) => readonly KindedLink[];
  readonly attach: (link: Link) => Disposable & { readonly mode: string };
  /** Every link is read again this often as a backstop to the notifications (default 60 s). */
  readonly resyncMs?: number;
  /** While a link fails to attach, the links are looked at again this often (default 1 s). */
  readonly retryMs?: number;
}

export function watchLinks(s: ResourceStack, ctx: PluginContext<unknown>, o: WatchLinksOptions): LinkWatcher {
  const failures = createAttachFailures(ctx, o.plugin, o.source);
  s.defer(() => ctx.metrics.reset([catalog.interfaceAttachFailed]));
  const sys = loadSys();
  const watcher = s.use(
    createLinkWatcher({ links: o.links, choose: o.choose, attach: (link) => failures.attach(link, () => o.attach(link)), noun: o.noun, log: ctx.log }),
  );
  let retry: NodeJS.Timeout | undefined;
  const look = {
    poll(): void {
      watcher.poll();
      if (failures.failing.size) failures.prune((name) => sys.ifNameToIndex(name));
      ctx.status.ok(o.watcher);
      if (failures.failing.size && !retry) {
        retry = setTimeout(() => {
          retry = undefined;
          try {
            look.poll();
          } catch (e) {
            ctx.status.degraded(o.watcher, errMessage(e));
          }
        }, o.retryMs ?? 1000);
      }
    },
  };
  s.defer(() => clearTimeout(retry));
  followLinks(s, look, { resyncMs: o.resyncMs ?? 60_000, log: ctx.log, onError: (e) => ctx.status.degraded(o.watcher, errMessage(e)) });
  return watcher;
}
