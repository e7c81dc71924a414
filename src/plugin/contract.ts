/**
 * The plugin contract: one small definition per plugin. Starting returns the handle that stops it,
 * so nothing that did not start can be stopped, and stopping releases everything start acquired.
 */
import type { AgentConfig, ConfigSpec } from '../config/index.js';
import type { FlowConsumer } from '../flow/index.js';
import type { Logger } from '../log/index.js';
import type { MetricDef, MetricWriters } from '../metrics/index.js';

export type OsName = 'linux' | 'windows';

/** A kernel or OS facility a plugin needs; the platform layer checks these before starting it. */
export type HookSpec =
  | { readonly kind: 'file'; readonly path: string; readonly optional?: boolean }
  | { readonly kind: 'tracepoint'; readonly target: string }
  | { readonly kind: 'btf' }
  | { readonly kind: 'tc' }
  | { readonly kind: 'capability'; readonly name: string }
  | { readonly kind: 'library'; readonly name: string };

export type PluginState = 'starting' | 'running' | 'degraded' | 'failed' | 'stopped';

/**
 * How a running plugin tells the manager about its health. A plugin has several independent loops
 * (a counter read, a watcher, a sweep); each reports under its own `source`, so one loop's `ok`
 * cannot clear another loop's problem. The plugin is degraded while any source is.
 */
export interface StatusReporter {
  /** `source` works, with all its data (clears that source's problem only). */
  ok(source: string): void;
  /** `source` works, but some data is missing (a PartialReadError, an interface not attached). */
  degraded(source: string, reason: string): void;
  /** Stopped working; the manager stops it and retries with backoff (unless the error is permanent). */
  failed(err: unknown): void;
}

/** The agent's own counters that plugins feed, already labelled with the plugin's name. */
export interface SelfMetrics {
  lostEvents(type: string, count: number): void;
  parsedPackets(count: number): void;
}

/**
 * The "IPs of interest" (Retina's filter map): pods the current MetricsConfiguration or annotations
 * select, plus the API server. Plugins that filter in the kernel mirror this set into their map.
 */
export interface IpInterest {
  /** true: report every packet (bypassLookupIPOfInterest, or no Kubernetes to choose from). */
  readonly bypass: boolean;
  /** The current set (IPv4 and IPv6 strings). */
  ips(): ReadonlySet<string>;
  /** Calls `listener` after each change; dispose to stop. */
  onChange(listener: () => void): Disposable;
}

/** The interest of an agent without Kubernetes: everything. */
export const everyIp: IpInterest = Object.freeze({
  bypass: true,
  ips: () => new Set<string>(),
  onChange: () => ({ [Symbol.dispose]: () => undefined }),
});

export interface PluginContext<C> {
  readonly config: Readonly<C>;
  readonly agent: Readonly<AgentConfig>;
  readonly log: Logger;
  readonly metrics: MetricWriters;
  readonly self: SelfMetrics;
  /**
   * Where flows go (the node's flow pipeline, src/pipeline), or undefined when no flows are wanted
   * (neither enablePodLevel nor hubble.enabled): the one place a plugin learns it, on every OS. A
   * plugin then builds and attaches nothing that only produces flows.
   */
  readonly flows: FlowConsumer | undefined;
  /** Which IPs flows are wanted for (pod-level plugins that filter in the kernel). */
  readonly interest: IpInterest;
  /** Aborted when the plugin is being stopped. */
  readonly signal: AbortSignal;
  readonly status: StatusReporter;
}

export interface PluginDefinition<C = object> {
  /** The `enabledPlugin` value, folder name and README name. */
  readonly name: string;
  readonly os: OsName;
  readonly description: string;
  /** In Retina's default `enabledPlugin` list for this OS. */
  readonly defaultEnabled: boolean;
  readonly config: ConfigSpec<C>;
  readonly hooks: readonly HookSpec[];
  readonly emits: readonly MetricDef[];
  /** Does nothing unless enablePodLevel (Retina: packetparser); reported at start when enabled without it. */
  readonly podLevelOnly?: boolean;
  /** Acquires everything; the returned handle releases it all. */
  start(ctx: PluginContext<C>): Promise<AsyncDisposable>;
}

/** Erases the config type so definitions with different configs share one list. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyPluginDefinition = PluginDefinition<any>;

export function definePlugin<C>(d: PluginDefinition<C>): PluginDefinition<C> {
  return Object.freeze(d);
}
