/**
 * Runs the enabled plugins: checks their hooks, starts each under a timeout, isolates failures
 * (a failed plugin is logged, counted, shown in /readyz and retried with capped, jittered backoff
 * while the others keep running), and stops them all in reverse order.
 */
import { catalog } from '../metrics/index.js';
import { Runner, type ManagerOptions, type PluginStatus } from './runner.js';

export type { ManagerOptions, PluginStatus } from './runner.js';

export interface PluginManager extends AsyncDisposable {
  /**
   * Starts every plugin; resolves when each has started or failed once (never rejects). The plugins
   * start one event-loop turn apart, and each after `between()` (the HTTP server's quiet(): the
   * requests that came meanwhile are answered first).
   */
  start(between?: () => Promise<void>): Promise<void>;
  status(): PluginStatus[];
  /** True when every enabled plugin runs (degraded counts as running). */
  ready(): boolean;
}

/** Self-metric families the manager writes for every plugin (ctx.self); never reset as a whole. */
const SELF_FAMILIES = new Set([catalog.lostEventsCounter.name, catalog.parsedPacketsCounter.name]);

export function createPluginManager(opts: ManagerOptions): PluginManager {
  // Families more than one plugin writes are never reset as a whole by one plugin's restart.
  const writers = new Map<string, number>();
  for (const d of opts.plugins) for (const m of new Set(d.emits.map((e) => e.name))) writers.set(m, (writers.get(m) ?? 0) + 1);
  const shared = new Set([...SELF_FAMILIES, ...[...writers].filter(([, n]) => n > 1).map(([m]) => m)]);
  const runners = opts.plugins.map((d) => new Runner(d, opts, shared));
  let stopped = false;
  return {
    async start(between) {
      // A plugin's start runs synchronously up to its first await (opening, loading and attaching its
      // BPF objects: 20-40 ms each). A turn of the event loop before each lets the HTTP server, already
      // listening, answer /metrics and the probes meanwhile instead of after every plugin has started.
      for (const r of runners) r.queued();
      const attempts: Promise<void>[] = [];
      for (const r of runners) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        await between?.();
        if (stopped) break;
        attempts.push(r.attempt());
      }
      await Promise.allSettled(attempts);
    },
    status: () => runners.map((r) => r.snapshot()),
    ready: () => !stopped && runners.every((r) => r.state === 'running' || r.state === 'degraded'),
    async [Symbol.asyncDispose]() {
      if (stopped) return;
      stopped = true;
      const errors: unknown[] = [];
      for (const r of [...runners].reverse()) {
        try {
          await r.stop();
        } catch (e) {
          errors.push(e);
        }
      }
      if (errors.length) throw new AggregateError(errors, `${errors.length} plugin(s) failed to stop cleanly`);
    },
  };
}
