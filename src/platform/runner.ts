/**
 * One plugin's life under the manager (manager.ts): its hooks checked, a start under a timeout, its
 * status from the sources it reports on, and on failure a stop, a count and a retry with capped,
 * jittered backoff (a PermanentError waits for a config change).
 */
import { backoffDelay, pick, type AgentConfig, type BackoffOptions, type LoadedValues } from '../config/index.js';
import type { FlowConsumer } from '../flow/index.js';
import { errorFields, type Logger } from '../log/line/index.js';
import { catalog, type MetricsRegistry } from '../metrics/index.js';
import { PermanentError, errMessage, everyIp, isPermanent, type AnyPluginDefinition, type IpInterest, type PluginContext, type PluginState } from '../plugin/index.js';
import { missingHooks, type PlatformInfo } from './capabilities.js';

export interface PluginStatus {
  readonly name: string;
  readonly state: PluginState;
  /** ISO time of the last state change. */
  readonly since: string;
  readonly lastError?: string;
  /** Why the plugin is degraded, if it is: every source's reason, `source: reason; ...`. */
  readonly detail?: string;
  /** The degraded sources and their reasons (each loop of a plugin reports on its own). */
  readonly degraded?: Readonly<Record<string, string>>;
  readonly failures: number;
  /** ISO time of the next start attempt while failed. */
  readonly nextRetry?: string;
}

/** A failed plugin's retry delays: 1 s doubling to 60 s, ±20 %. */
const RETRY_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 60_000, jitter: 0.2 };

export interface ManagerOptions {
  readonly plugins: readonly AnyPluginDefinition[];
  readonly values: LoadedValues;
  readonly agent: AgentConfig;
  readonly info: PlatformInfo;
  readonly log: Logger;
  readonly metrics: MetricsRegistry;
  /** The flow pipeline's sink for every plugin's context; undefined: no flows are wanted. */
  readonly flows: FlowConsumer | undefined;
  /** IPs of interest for kernel-side filters (default: every IP). */
  readonly interest?: IpInterest;
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
}

/** The stack of an Error, as a log field (where a start failed is what a bug report needs). */
const stackOf = (e: unknown): { stack?: string } => (e instanceof Error && e.stack !== undefined ? { stack: e.stack } : {});

export class Runner {
  state: PluginState = 'stopped';
  #since = new Date();
  #lastError: string | undefined;
  /** The sources that reported degraded, with their reasons; the plugin is degraded while any is. */
  readonly #problems = new Map<string, string>();
  /** The lost_events_counter `type`s this plugin wrote (its series are labelled reason=<plugin>). */
  readonly #lostTypes = new Set<string>();
  #failures = 0;
  #attempt = 0;
  #handle: AsyncDisposable | undefined;
  #abort: AbortController | undefined;
  #retry: NodeJS.Timeout | undefined;
  #nextRetry: Date | undefined;
  #stopping = false;
  /** A failure reported while starting, handled when start returns. */
  #earlyFailure: { err: unknown } | undefined;
  /** The release of a plugin that failed while running, which stop() waits for. */
  #releasing: Promise<void> | undefined;
  readonly #log: Logger;
  readonly #backoff: BackoffOptions;

  constructor(
    readonly def: AnyPluginDefinition,
    readonly opts: ManagerOptions,
    /** Families this runner must not reset as a whole: the self-metrics and those others write too. */
    readonly shared: ReadonlySet<string>,
  ) {
    this.#log = opts.log.child({ component: 'plugin', plugin: def.name });
    this.#backoff = opts.backoff ?? RETRY_BACKOFF;
  }

  snapshot(): PluginStatus {
    return {
      name: this.def.name,
      state: this.state,
      since: this.#since.toISOString(),
      failures: this.#failures,
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
      ...(this.#problems.size ? { detail: [...this.#problems].map(([k, v]) => `${k}: ${v}`).join('; '), degraded: Object.fromEntries(this.#problems) } : {}),
      ...(this.#nextRetry !== undefined ? { nextRetry: this.#nextRetry.toISOString() } : {}),
    };
  }

  #set(state: PluginState): void {
    if (state !== this.state) this.#since = new Date();
    this.state = state;
    const up = state === 'running' || state === 'degraded' ? 1 : 0;
    this.opts.metrics.gauge(catalog.pluginUp).set({ plugin: this.def.name }, up);
  }

  /** Its start comes next (manager.start starts the plugins one loop turn apart): `starting` already. */
  queued(): void {
    if (!this.#stopping && this.state === 'stopped') this.#set('starting');
  }

  /** One start attempt; on failure schedules the next one. Never throws. */
  async attempt(): Promise<void> {
    if (this.#stopping) return;
    this.#retry = undefined;
    this.#nextRetry = undefined;
    const id = ++this.#attempt;
    this.#problems.clear();
    this.#earlyFailure = undefined;
    this.#set('starting');
    const missing = missingHooks(this.def.hooks, this.opts.info);
    if (missing.length) {
      this.#fail(new PermanentError(`this host lacks ${missing.join(', ')}`), id);
      return;
    }
    const abort = new AbortController();
    this.#abort = abort;
    const ctx: PluginContext<unknown> = {
      config: pick(this.def.config, this.opts.values),
      agent: this.opts.agent,
      log: this.#log,
      metrics: this.opts.metrics,
      self: {
        lostEvents: (type, n) => {
          this.#lostTypes.add(type);
          this.opts.metrics.counter(catalog.lostEventsCounter).inc({ type, reason: this.def.name }, n);
        },
        parsedPackets: (n) => this.opts.metrics.counter(catalog.parsedPacketsCounter).inc(n),
      },
      flows: this.opts.flows,
      interest: this.opts.interest ?? everyIp,
      signal: abort.signal,
      status: {
        ok: (source) => this.#report(id, source, undefined),
        degraded: (source, reason) => this.#report(id, source, reason),
        failed: (err) => void this.#runtimeFailure(id, err),
      },
    };
    const timeoutMs = this.opts.agent.pluginStartTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const started = this.def.start(ctx);
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`start did not finish within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const handle = await Promise.race([started, timeout]);
      if (id !== this.#attempt || this.#stopping) {
        await handle[Symbol.asyncDispose]();
        return;
      }
      this.#handle = handle;
      // The plugin may already have reported degraded during start; keep that.
      this.#set(this.#problems.size ? 'degraded' : 'running');
      this.#lastError = undefined;
      this.#log.info('plugin started', { state: this.state });
      const early = this.#earlyFailure as { err: unknown } | undefined;
      this.#earlyFailure = undefined;
      if (early) void this.#runtimeFailure(id, early.err);
    } catch (e) {
      abort.abort();
      // A start that finishes after its timeout is released as soon as it resolves.
      started.then((h) => h[Symbol.asyncDispose](), () => undefined).catch((err: unknown) => {
        this.#log.warn('releasing a late start failed', { error: errMessage(err) });
      });
      this.#fail(e, id);
    } finally {
      clearTimeout(timer);
    }
  }

  /** `reason` undefined: `source` is ok again. */
  #report(id: number, source: string, reason: string | undefined): void {
    if (id !== this.#attempt || this.#stopping) return;
    const had = this.#problems.get(source);
    if (reason === had) return;
    if (reason === undefined) {
      this.#problems.delete(source);
      this.#log.info('plugin source recovered', { source });
    } else {
      this.#problems.set(source, reason);
      this.#log.warn('plugin degraded', { source, reason });
    }
    // While starting, the state is settled when start() returns.
    if (this.state === 'running' || this.state === 'degraded') this.#set(this.#problems.size ? 'degraded' : 'running');
  }

  /**
   * Removes this plugin's series: the families only it writes, and its own series of the shared
   * self-metric families (lost_events_counter{reason=<plugin>}), so other plugins' counts stay.
   * parsed_packets_counter has no plugin label (as in Retina): it is a node total and is kept.
   */
  #removeSeries(): void {
    this.opts.metrics.reset(this.def.emits.filter((d) => !this.shared.has(d.name)));
    if (!this.#lostTypes.size) return;
    const lost = this.opts.metrics.counter(catalog.lostEventsCounter);
    for (const type of this.#lostTypes) lost.remove({ type, reason: this.def.name });
    this.#lostTypes.clear();
  }

  /**
   * A running plugin reported a failure (its ring cannot be read, an attachment is gone): dispose
   * its stack, remove its series, and start it again with backoff. A failure reported while it is
   * still starting is handled as soon as start returns.
   */
  async #runtimeFailure(id: number, err: unknown): Promise<void> {
    if (id !== this.#attempt || this.#stopping) return;
    if (this.state === 'starting') {
      this.#earlyFailure ??= { err };
      return;
    }
    if (this.state !== 'running' && this.state !== 'degraded') return;
    const handle = this.#handle;
    this.#handle = undefined;
    this.#abort?.abort();
    this.#lastError = errMessage(err);
    this.#set('failed');
    this.#log.error('plugin failed while running; stopping it', { error: err instanceof Error ? errorFields(err) : String(err) });
    const release = (async () => {
      // Not inside the caller's stack: failed() may come from a ring drain or an FFI callback.
      await new Promise((r) => setImmediate(r));
      try {
        await handle?.[Symbol.asyncDispose]();
      } catch (e) {
        this.#log.warn('stopping the failed plugin left errors', { error: errMessage(e) });
      }
      this.#removeSeries();
    })();
    this.#releasing = release;
    await release;
    this.#releasing = undefined;
    this.#fail(err, id);
  }

  #fail(err: unknown, id: number): void {
    if (id !== this.#attempt) return;
    this.#failures++;
    this.#lastError = errMessage(err);
    this.#problems.clear();
    this.#set('failed');
    this.opts.metrics.counter(catalog.pluginManagerFailedToReconcile).inc({ reason: this.def.name });
    const permanent = isPermanent(err);
    if (permanent || this.#stopping) {
      this.#log.error('plugin failed; not retrying', { error: this.#lastError, permanent, ...stackOf(err) });
      return;
    }
    const delay = backoffDelay(this.#backoff, this.#failures, this.opts.random ?? Math.random);
    this.#nextRetry = new Date(Date.now() + delay);
    this.#log.error('plugin failed; retrying', { error: this.#lastError, retryInMs: delay, failures: this.#failures, ...stackOf(err) });
    this.#retry = setTimeout(() => void this.attempt(), delay);
    this.#retry.unref();
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#nextRetry = undefined;
    this.#abort?.abort();
    const handle = this.#handle;
    this.#handle = undefined;
    this.#attempt++;
    try {
      await this.#releasing;
      if (handle) await handle[Symbol.asyncDispose]();
    } finally {
      this.#removeSeries();
      this.#set('stopped');
      this.#log.info('plugin stopped');
    }
  }
}
