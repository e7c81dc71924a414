/**
 * Runs the enabled plugins: checks their hooks, starts each under a timeout, isolates failures
 * (a failed plugin is logged, counted, shown in /readyz and retried with capped, jittered backoff
 * while the others keep running), and stops them all in reverse order.
 */
import { pick, type AgentConfig, type LoadedValues } from '../config/index.js';
import type { FlowConsumer } from '../flow/index.js';
import type { Logger } from '../log/index.js';
import { catalog, type MetricsRegistry } from '../metrics/index.js';
import { PermanentError, errMessage, everyIp, type AnyPluginDefinition, type IpInterest, type PluginContext, type PluginState } from '../plugin/index.js';
import { missingHooks, type PlatformInfo } from './capabilities.js';

export interface PluginStatus {
  readonly name: string;
  readonly state: PluginState;
  /** ISO time of the last state change. */
  readonly since: string;
  readonly lastError?: string;
  /** Why the plugin is degraded, if it is. */
  readonly detail?: string;
  readonly failures: number;
  /** ISO time of the next start attempt while failed. */
  readonly nextRetry?: string;
}

export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  /** 0..1: the delay is scaled by a random factor in [1 - jitter, 1 + jitter]. */
  readonly jitter: number;
}

export interface ManagerOptions {
  readonly plugins: readonly AnyPluginDefinition[];
  readonly values: LoadedValues;
  readonly agent: AgentConfig;
  readonly info: PlatformInfo;
  readonly log: Logger;
  readonly metrics: MetricsRegistry;
  readonly flows: FlowConsumer;
  /** IPs of interest for kernel-side filters (default: every IP). */
  readonly interest?: IpInterest;
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
}

export interface PluginManager extends AsyncDisposable {
  /** Starts every plugin; resolves when each has started or failed once (never rejects). */
  start(): Promise<void>;
  status(): PluginStatus[];
  /** True when every enabled plugin runs (degraded counts as running). */
  ready(): boolean;
}

const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 60_000, jitter: 0.2 };

export function createPluginManager(opts: ManagerOptions): PluginManager {
  const runners = opts.plugins.map((d) => new Runner(d, opts));
  let stopped = false;
  return {
    async start() {
      await Promise.allSettled(runners.map((r) => r.attempt()));
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

class Runner {
  state: PluginState = 'stopped';
  #since = new Date();
  #lastError: string | undefined;
  #detail: string | undefined;
  #failures = 0;
  #attempt = 0;
  #handle: AsyncDisposable | undefined;
  #abort: AbortController | undefined;
  #retry: NodeJS.Timeout | undefined;
  #nextRetry: Date | undefined;
  #stopping = false;
  readonly #log: Logger;
  readonly #backoff: BackoffOptions;

  constructor(
    readonly def: AnyPluginDefinition,
    readonly opts: ManagerOptions,
  ) {
    this.#log = opts.log.child({ component: 'plugin', plugin: def.name });
    this.#backoff = opts.backoff ?? DEFAULT_BACKOFF;
  }

  snapshot(): PluginStatus {
    return {
      name: this.def.name,
      state: this.state,
      since: this.#since.toISOString(),
      failures: this.#failures,
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
      ...(this.#detail !== undefined ? { detail: this.#detail } : {}),
      ...(this.#nextRetry !== undefined ? { nextRetry: this.#nextRetry.toISOString() } : {}),
    };
  }

  #set(state: PluginState): void {
    if (state !== this.state) this.#since = new Date();
    this.state = state;
    const up = state === 'running' || state === 'degraded' ? 1 : 0;
    this.opts.metrics.gauge(catalog.pluginUp).set({ plugin: this.def.name }, up);
  }

  /** One start attempt; on failure schedules the next one. Never throws. */
  async attempt(): Promise<void> {
    if (this.#stopping) return;
    this.#retry = undefined;
    this.#nextRetry = undefined;
    const id = ++this.#attempt;
    this.#detail = undefined;
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
        lostEvents: (type, n) => this.opts.metrics.counter(catalog.lostEventsCounter).inc({ type, reason: this.def.name }, n),
        parsedPackets: (n) => this.opts.metrics.counter(catalog.parsedPacketsCounter).inc(n),
      },
      flows: this.opts.flows,
      interest: this.opts.interest ?? everyIp,
      signal: abort.signal,
      status: {
        ok: () => this.#report(id, 'running'),
        degraded: (reason) => this.#report(id, 'degraded', reason),
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
      this.#set(this.#detail !== undefined ? 'degraded' : 'running');
      this.#lastError = undefined;
      this.#log.info('plugin started', { state: this.state });
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

  #report(id: number, state: 'running' | 'degraded', detail?: string): void {
    if (id !== this.#attempt || this.#stopping) return;
    if (state === 'degraded' && this.#detail !== detail) this.#log.warn('plugin degraded', { reason: detail });
    if (state === 'running' && this.#detail !== undefined) this.#log.info('plugin recovered');
    this.#detail = state === 'degraded' ? detail : undefined;
    // While starting, the state is settled when start() returns.
    if (this.state === 'running' || this.state === 'degraded') this.#set(state);
  }

  async #runtimeFailure(id: number, err: unknown): Promise<void> {
    if (id !== this.#attempt || this.#stopping || this.state === 'failed') return;
    const handle = this.#handle;
    this.#handle = undefined;
    this.#abort?.abort();
    this.#fail(err, id);
    if (handle) {
      try {
        await handle[Symbol.asyncDispose]();
      } catch (e) {
        this.#log.warn('stopping the failed plugin left errors', { error: errMessage(e) });
      }
      this.opts.metrics.reset(this.def.emits);
    }
  }

  #fail(err: unknown, id: number): void {
    if (id !== this.#attempt) return;
    this.#failures++;
    this.#lastError = errMessage(err);
    this.#detail = undefined;
    this.#set('failed');
    this.opts.metrics.counter(catalog.pluginManagerFailedToReconcile).inc({ reason: this.def.name });
    const permanent = err instanceof PermanentError;
    if (permanent || this.#stopping) {
      this.#log.error('plugin failed; not retrying', { error: this.#lastError, permanent });
      return;
    }
    const b = this.#backoff;
    const base = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(this.#failures - 1, 30));
    const rnd = this.opts.random ?? Math.random;
    const delay = Math.max(0, Math.round(base * (1 + b.jitter * (2 * rnd() - 1))));
    this.#nextRetry = new Date(Date.now() + delay);
    this.#log.error('plugin failed; retrying', { error: this.#lastError, retryInMs: delay, failures: this.#failures });
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
      if (handle) await handle[Symbol.asyncDispose]();
    } finally {
      this.opts.metrics.reset(this.def.emits);
      this.#set('stopped');
      this.#log.info('plugin stopped');
    }
  }
}
