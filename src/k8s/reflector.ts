/**
 * A reflector keeps a local store in step with one API collection: a paginated LIST, then a WATCH
 * from its resourceVersion with bookmarks. A 410 Gone (or an ERROR event with code 410) relists; any
 * other failure reconnects after a capped, jittered backoff; a watchdog restarts a watch that has been
 * silent for too long. Objects are slimmed by `transform` on arrival, so the store holds only what
 * consumers need. It never gives up: it retries and reports what happens through `stats()`/`onEvent`.
 * One bad object never blocks it: an object the transform throws on is counted (`onRejected`), logged
 * rate-limited and treated as absent (a cached older version is deleted, so its IPs are never
 * attributed from stale data), and the resourceVersion moves on. A LIST page over `maxListBytes` is
 * fetched again in smaller pages; a watch event over `maxEventBytes` makes it relist.
 */
import { Backoff } from '../config/index.js';
import { sleep, systemClock, type Clock } from './clock.js';
import { ResponseTooLargeError, isApiError, type RestClient } from './rest.js';
import { Intake, type RejectReason } from './rejects.js';
import { collectionPath, keyOf, type KubeObject, type ResourceRef } from './resources.js';
import { listPaged } from './list.js';
import type { Logger } from '../log/index.js';
import { NotifyingStore, compactRv, type Entry, type ReflectorHandler } from './store.js';

export type { ReflectorHandler } from './store.js';
export type { RejectReason } from './rejects.js';

export type ReflectorEvent = 'listed' | 'relisted' | 'gone' | 'reconnected' | 'watchdog' | 'error';

export interface ReflectorOptions<T extends KubeObject, S> {
  readonly client: RestClient;
  readonly resource: ResourceRef;
  readonly namespace?: string | undefined;
  readonly fieldSelector?: string | undefined;
  readonly labelSelector?: string | undefined;
  /** Slims an object on arrival; undefined means "not kept" (treated as absent). */
  readonly transform: (o: T) => S | undefined;
  /** Slim objects that are equal cause no update event (default: same JSON). */
  readonly equal?: (a: S, b: S) => boolean;
  readonly pageSize?: number;
  /**
   * How the initial state arrives: 'list' (paginated LIST, then WATCH) or 'stream' (one WATCH with
   * sendInitialEvents, the API's WatchList: objects arrive one by one, so a client never holds a page
   * of 500 parsed objects; falls back to 'list' when the server refuses it). Default 'list'.
   */
  readonly initialState?: 'list' | 'stream';
  /** Server-side watch timeout; each watch gets this times a factor in [1, 2). */
  readonly watchTimeoutSeconds?: number;
  /** Restart a watch that delivered nothing (not even a bookmark) for this long. */
  readonly inactivityTimeoutMs?: number;
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  readonly clock?: Clock;
  readonly random?: () => number;
  readonly log?: Logger;
  readonly onEvent?: (event: ReflectorEvent, resource: string) => void;
  /** An object (or a page or event over a cap) was skipped; see RejectReason. */
  readonly onRejected?: (reason: RejectReason, resource: string) => void;
  /** Cap on one LIST page's body (default rest.ts MAX_BODY_BYTES); past it the page is fetched again, half as big. */
  readonly maxListBytes?: number;
  /** Cap on one watch event's line (default rest.ts MAX_LINE_BYTES); past it the reflector relists. */
  readonly maxEventBytes?: number;
  /** At most one log line per this many ms about rejected objects (default 60 s). */
  readonly rejectLogIntervalMs?: number;
}

export interface ReflectorStats {
  readonly resource: string;
  readonly synced: boolean;
  readonly resourceVersion: string;
  readonly size: number;
  readonly lists: number;
  readonly gone: number;
  readonly reconnects: number;
  readonly watchdogRestarts: number;
  readonly events: number;
  readonly errors: number;
  /** Objects, pages and events skipped (onRejected). */
  readonly rejected: number;
  readonly lastError: string | undefined;
}

class GoneError extends Error {
  override readonly name = 'GoneError';
}

export class Reflector<T extends KubeObject, S> {
  readonly #o: ReflectorOptions<T, S>;
  readonly #clock: Clock;
  readonly #store: NotifyingStore<S>;
  readonly #backoff: Backoff;
  readonly #name: string;
  #rv = '';
  #abort = new AbortController();
  #running: Promise<void> | undefined;
  #stream: Disposable | undefined;
  #initialSeen: Set<string> | undefined;
  #streamRefused = false;
  #pageSize: number;
  readonly #intake: Intake<T, S>;
  #stats = { lists: 0, gone: 0, reconnects: 0, watchdogRestarts: 0, events: 0, errors: 0, lastError: undefined as string | undefined };

  constructor(opts: ReflectorOptions<T, S>) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    // Jitter: a factor in [0.5, 1.5), capped at the maximum.
    this.#backoff = new Backoff({ initialMs: opts.backoffInitialMs ?? 800, maxMs: opts.backoffMaxMs ?? 30_000, jitter: 0.5 }, opts.random);
    this.#name = `${opts.resource.plural}${opts.resource.group ? '.' + opts.resource.group : ''}`;
    this.#store = new NotifyingStore<S>(this.#name, opts.equal, opts.log);
    this.#pageSize = opts.pageSize ?? 500;
    this.#intake = new Intake<T, S>(this.#name, opts.transform, this.#clock, opts.log, opts.onRejected, opts.rejectLogIntervalMs);
  }

  get name(): string {
    return this.#name;
  }

  get(key: string): S | undefined {
    return this.#store.get(key)?.value;
  }
  list(): S[] {
    return [...this.#store.values()].map((e) => e.value);
  }
  keys(): string[] {
    return this.#store.keys();
  }
  get size(): number {
    return this.#store.size;
  }
  get synced(): boolean {
    return this.#store.synced;
  }

  /** Handlers see every change from now on; with `replay`, the current items first as `added`. */
  subscribe(h: ReflectorHandler<S>, replay = true): Disposable {
    return this.#store.subscribe(h, replay);
  }

  stats(): ReflectorStats {
    return { resource: this.#name, synced: this.#store.synced, resourceVersion: this.#rv, size: this.#store.size, ...this.#stats, rejected: this.#intake.rejected };
  }

  /** Starts the list/watch loop in the background; the returned handle stops it. */
  start(): AsyncDisposable {
    if (!this.#running) this.#running = this.#loop();
    return { [Symbol.asyncDispose]: () => this.stop() };
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    this.#stream?.[Symbol.dispose]();
    await this.#running;
    this.#intake[Symbol.dispose]();
  }

  async #loop(): Promise<void> {
    const signal = this.#abort.signal;
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList && this.#o.initialState === 'stream' && !this.#streamRefused) {
          const lists = this.#stats.lists;
          try {
            await this.#watch(signal, true);
          } catch (e) {
            // Only an answer to the request itself (not a stream event) says "not supported here".
            if (!(isApiError(e) && [400, 403, 422].includes(e.code))) throw e;
            this.#streamRefused = true;
            this.#o.log?.info('the API server does not stream initial events; listing instead', { resource: this.#name, error: e.message });
          } finally {
            if (this.#stats.lists > lists) needList = false;
            this.#initialSeen = undefined;
          }
          if (!this.#streamRefused) continue; // resume watching from #rv (or stream again if it ended early)
        }
        if (needList) {
          await this.#list(signal);
          needList = false;
          this.#backoff.reset();
        }
        await this.#watch(signal);
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof ResponseTooLargeError && e.part === 'line') {
          // The event was not read, so resuming from #rv would meet it again: relist instead (in pages).
          this.#intake.reject('(watch event)', 'watch_event_too_large', e.message);
          needList = true;
          this.#streamRefused = true;
        }
        if (e instanceof GoneError || isApiError(e, 410)) {
          this.#stats.gone++;
          this.#emit('gone');
          this.#o.log?.info('resource version expired (410); relisting', { resource: this.#name, resourceVersion: this.#rv });
          needList = true;
          await sleep(this.#clock, Math.round(100 + 400 * (this.#o.random ?? Math.random)()), signal);
          continue;
        }
        this.#stats.errors++;
        this.#stats.lastError = (e as Error).message;
        this.#emit('error');
        const delay = this.#backoff.next();
        this.#o.log?.warn('list/watch failed; retrying', { resource: this.#name, error: (e as Error).message, retryInMs: delay });
        await sleep(this.#clock, delay, signal);
        if (!needList) {
          this.#stats.reconnects++;
          this.#emit('reconnected');
        }
      }
    }
  }

  #query(): Record<string, string | undefined> {
    return { fieldSelector: this.#o.fieldSelector, labelSelector: this.#o.labelSelector };
  }

  async #list(signal: AbortSignal): Promise<void> {
    // key -> [the object's name, its entry]
    const fresh = new Map<string, [string, Entry<S>]>();
    const { resourceVersion: rv, pageSize } = await listPaged<T>({
      client: this.#o.client, path: collectionPath(this.#o.resource, this.#o.namespace), query: this.#query(), signal,
      pageSize: this.#pageSize, maxBodyBytes: this.#o.maxListBytes,
      onItems: (items) => {
        for (const item of items) {
          const t = this.#intake.take(item);
          if (t?.value !== undefined) fresh.set(t.key, [item.metadata.name, { rv: compactRv(item.metadata.resourceVersion), value: t.value }]);
        }
      },
      onRestart: () => fresh.clear(),
      onShrink: (n, e) => this.#intake.reject('(list page)', 'list_page_too_large', `${e.message}; listing ${n} per page from now on`),
    });
    this.#pageSize = pageSize;
    this.#rv = rv;
    this.#store.retainOnly(fresh);
    for (const [k, [name, e]] of fresh) this.#store.upsert(k, e, name);
    this.#o.log?.debug('listed', { resource: this.#name, items: fresh.size, resourceVersion: rv });
    this.#finishList();
  }

  async #watch(signal: AbortSignal, initial = false): Promise<void> {
    const timeout = Math.round((this.#o.watchTimeoutSeconds ?? 300) * (1 + (this.#o.random ?? Math.random)()));
    const query = initial
      ? { ...this.#query(), watch: 1, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true, timeoutSeconds: timeout }
      : { ...this.#query(), watch: 1, resourceVersion: this.#rv, allowWatchBookmarks: true, timeoutSeconds: timeout };
    const stream = await this.#o.client.stream(collectionPath(this.#o.resource, this.#o.namespace), { query, signal, maxLineBytes: this.#o.maxEventBytes });
    if (initial) this.#initialSeen = new Set();
    this.#stream = stream;
    const opened = this.#clock.now();
    const idleMs = this.#o.inactivityTimeoutMs ?? 180_000;
    let silentTimer: Disposable | undefined;
    let silent = false;
    const arm = (): void => {
      silentTimer?.[Symbol.dispose]();
      silentTimer = this.#clock.setTimeout(() => {
        silent = true;
        stream[Symbol.dispose]();
      }, idleMs);
    };
    arm();
    let lines = 0;
    try {
      for await (const line of stream.lines) {
        arm();
        lines++;
        this.#apply(line as { type: string; object: T & { code?: number; message?: string } });
        if (this.#clock.now() - opened > 5_000) this.#backoff.reset();
      }
    } catch (e) {
      if (!silent && !signal.aborted) throw e;
    } finally {
      silentTimer?.[Symbol.dispose]();
      stream[Symbol.dispose]();
      this.#stream = undefined;
    }
    // A server that closes watches at once (shutting down, overloaded) must not make us spin.
    if (!silent && !signal.aborted && lines === 0 && this.#clock.now() - opened < 1000) throw new Error('watch closed by the server at once');
    if (silent && !signal.aborted) {
      this.#stats.watchdogRestarts++;
      this.#emit('watchdog');
      this.#o.log?.warn('watch silent for too long; restarting it', { resource: this.#name, idleMs });
    }
  }

  #apply(ev: { type: string; object: T & { code?: number; message?: string } }): void {
    const o = ev.object;
    switch (ev.type) {
      case 'BOOKMARK':
        if (o.metadata?.resourceVersion) this.#rv = o.metadata.resourceVersion;
        if (this.#initialSeen && o.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true') this.#initialDone();
        return;
      case 'ERROR':
        if (o.code === 410) throw new GoneError(o.message ?? 'resource version too old');
        throw new Error(`watch error ${o.code ?? ''}: ${o.message ?? JSON.stringify(o)}`);
      case 'ADDED':
      case 'MODIFIED': {
        this.#stats.events++;
        this.#rv = o.metadata?.resourceVersion ?? this.#rv;
        const t = this.#intake.take(o);
        if (!t) return;
        this.#initialSeen?.add(t.key);
        if (t.value === undefined) this.#store.delete(t.key);
        else this.#store.upsert(t.key, { rv: compactRv(o.metadata.resourceVersion), value: t.value }, o.metadata.name);
        return;
      }
      case 'DELETED': {
        this.#stats.events++;
        this.#rv = o.metadata?.resourceVersion ?? this.#rv;
        if (o.metadata?.name) this.#store.delete(keyOf(o));
        return;
      }
      default:
        return;
    }
  }

  /** The end of a stream's initial events: what was not sent no longer exists. */
  #initialDone(): void {
    const seen = this.#initialSeen as Set<string>;
    this.#initialSeen = undefined;
    this.#store.retainOnly(seen);
    this.#finishList();
  }

  #finishList(): void {
    const first = this.#stats.lists === 0;
    this.#stats.lists++;
    this.#emit(first ? 'listed' : 'relisted');
    this.#backoff.reset();
    this.#store.markSynced();
  }

  #emit(ev: ReflectorEvent): void {
    try {
      this.#o.onEvent?.(ev, this.#name);
    } catch {
      // counting must never break the loop
    }
  }
}
