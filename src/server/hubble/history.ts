/**
 * GetFlows beyond the ring (`hubble.history.fromExport`): the older part of a time range read from
 * the node's stored flow-log files (a `StoredFlowSource`: src/export/history.ts, handed in by
 * src/cli), parsed back into the Hubble flow objects the ring's flows become (src/flow/hubble's JSON
 * reader), so the same filters, field masks and encoder apply.
 *
 * The seam: the files hold every flow the exporter selected, the ring's too; the stored part ends at
 * the first line that is the line of a flow the ring held when the request came (the store's
 * `lineOf`, compared only for lines as recent as the ring's oldest flow), so no flow is sent twice.
 * When the ring held no flow the store keeps, the stored part ends at the request's time.
 *
 * Order: the files' order (the pipeline's), put in time order within a window of `sortWindow` flows
 * (flows of different plugins reach the pipeline slightly out of time order, across a backup boundary
 * too), so that Hubble Relay, which merges nodes by time, gets each node's stream in time order.
 * Memory: a chunk of lines, the window, and the seam's lines (one per ring flow the store keeps, as
 * far as reading reaches into the ring's times).
 */
import type { Flow } from '../../flow/index.js';
import { parseRfc3339, type FlowMatcher, type HubbleObject } from '../../flow/hubble/index.js';
import type { FlowSink, PickedFlow } from './frames.js';

/** The stored flows a Hubble server reads beyond its ring (src/export/history.ts `createExportHistory`). */
export interface StoredFlowSource {
  /** For errors and logs: `hubble.export.static (/var/run/retina/hubble/events.log)`. */
  readonly name: string;
  /** The FlowFilters the stored flows were selected by (allow: any; deny: none). */
  readonly allow: readonly Readonly<Record<string, unknown>>[];
  readonly deny: readonly Readonly<Record<string, unknown>>[];
  /** The stored lines (JSON `{flow, node_name, time}`), oldest file first, from the first file that may hold `sinceMs`. */
  lines(sinceMs: number | undefined): AsyncIterable<string[]>;
  /** The line the store holds for one of our flows, or undefined when it does not keep it. */
  lineOf(flow: Readonly<Flow>): string | undefined;
}

type Ts = { seconds: number; nanos: number };

export interface StoredReadRequest {
  readonly since: Ts | undefined;
  readonly until: Ts | undefined;
  readonly matcher: FlowMatcher;
  /** The ring's flows when the request came (references). */
  readonly ring: readonly Readonly<Flow>[];
  /** The request's time (ms): the end of the stored part when the ring holds no flow the store keeps. */
  readonly nowMs: number;
  /** A stored `flow` (protojson) as a Hubble flow object (throws on a bad one). */
  readonly readFlow: (json: Record<string, unknown>) => HubbleObject;
  readonly cancelled: () => boolean;
  /** Flows put in time order at a time (default 512). */
  readonly sortWindow?: number;
  /** Lines past `until` by more than this end the reading (default 60 s: the store's order is the pipeline's, not time's). */
  readonly slackMs?: number;
}

export interface StoredReadStats {
  /** Lines read (up to the seam). */
  lines: number;
  /** Lines that were not a stored flow (bad JSON, no time). */
  bad: number;
}

const PREFIX = '{"flow":{"time":"';

/** The flow's time of a stored line without parsing it (the exporter writes `time` first), or undefined. */
function fastTime(line: string): Ts | undefined {
  if (!line.startsWith(PREFIX)) return undefined;
  const end = line.indexOf('"', PREFIX.length);
  return end < 0 ? undefined : parseRfc3339(line.slice(PREFIX.length, end));
}

const cmp = (a: Ts, b: Ts): number => (a.seconds !== b.seconds ? a.seconds - b.seconds : a.nanos - b.nanos);
const msOf = (t: Ts): number => t.seconds * 1000 + t.nanos / 1e6;

/** A min-heap of picked flows by time, then arrival (stable). */
class TimeHeap {
  readonly #items: { p: PickedFlow; t: Ts; n: number }[] = [];
  #n = 0;
  get size(): number {
    return this.#items.length;
  }
  #less(i: number, j: number): boolean {
    const a = this.#items[i] as { t: Ts; n: number };
    const b = this.#items[j] as { t: Ts; n: number };
    const c = cmp(a.t, b.t);
    return c < 0 || (c === 0 && a.n < b.n);
  }
  #swap(i: number, j: number): void {
    const x = this.#items[i] as { p: PickedFlow; t: Ts; n: number };
    this.#items[i] = this.#items[j] as { p: PickedFlow; t: Ts; n: number };
    this.#items[j] = x;
  }
  push(p: PickedFlow, t: Ts): void {
    this.#items.push({ p, t, n: this.#n++ });
    for (let i = this.#items.length - 1; i > 0;) {
      const up = (i - 1) >> 1;
      if (!this.#less(i, up)) break;
      this.#swap(i, up);
      i = up;
    }
  }
  pop(): PickedFlow | undefined {
    const items = this.#items;
    const top = items[0];
    if (top === undefined) return undefined;
    const last = items.pop() as { p: PickedFlow; t: Ts; n: number };
    if (items.length > 0) {
      items[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && this.#less(l, m)) m = l;
        if (r < items.length && this.#less(r, m)) m = r;
        if (m === i) break;
        this.#swap(i, m);
        i = m;
      }
    }
    return top.p;
  }
}

/**
 * The stored flows a request asks for, older than the ring's, matching its filters, in batches in
 * time order (within the window); `stats` counts what was read. Stopping early closes the files.
 */
export async function* readStoredFlows(src: StoredFlowSource, req: StoredReadRequest, stats: StoredReadStats = { lines: 0, bad: 0 }): AsyncGenerator<PickedFlow[], void, undefined> {
  const window = req.sortWindow ?? 512;
  const slack = req.slackMs ?? 60_000;
  /**
   * The lines of the ring's flows the store keeps, up to the time of the line read: a line that is a
   * ring flow's has its time, so a ring flow's line is made only once reading reaches its time (the
   * seam is usually among the ring's oldest: a few lines made, not the ring's).
   */
  const byTime = [...req.ring].sort((a, b) => a.timeMs - b.timeMs);
  const seam = new Set<string>();
  let next = 0;
  /** Whether no flow of the ring is kept by the store (known once every ring flow's line is made): the stored part then ends at the request's time. */
  let noneKept = byTime.length === 0;
  const reach = (ms: number): void => {
    for (; next < byTime.length && (byTime[next] as Readonly<Flow>).timeMs <= ms; next++) {
      const line = src.lineOf(byTime[next] as Readonly<Flow>);
      if (line !== undefined) seam.add(line);
    }
    if (next === byTime.length && seam.size === 0) noneKept = true;
  };
  const ringMin = byTime[0]?.timeMs ?? Infinity;
  const untilMs = req.until === undefined ? Infinity : msOf(req.until) + slack;
  const heap = new TimeHeap();
  const sinceMs = req.since === undefined ? undefined : msOf(req.since);
  let done = false;
  for await (const batch of src.lines(sinceMs)) {
    const out: PickedFlow[] = [];
    for (const line of batch) {
      if (req.cancelled()) return;
      stats.lines++;
      let json: { flow?: unknown } | undefined;
      let t = fastTime(line);
      try {
        if (t === undefined) {
          json = JSON.parse(line) as { flow?: unknown };
          const time = (json?.flow as { time?: unknown } | undefined)?.time;
          t = typeof time === 'string' ? parseRfc3339(time) : undefined;
        }
      } catch {
        t = undefined;
      }
      if (t === undefined) {
        stats.bad++;
        continue;
      }
      const ms = msOf(t);
      if (ms >= ringMin) {
        reach(ms);
        if (seam.has(line)) {
          done = true;
          break;
        }
      }
      if ((noneKept && ms > req.nowMs) || ms > untilMs) {
        done = true;
        break;
      }
      if ((req.since !== undefined && cmp(t, req.since) < 0) || (req.until !== undefined && cmp(t, req.until) > 0)) continue;
      let hubble: HubbleObject;
      try {
        json ??= JSON.parse(line) as { flow?: unknown };
        const flow = json.flow;
        if (flow === null || typeof flow !== 'object') throw new TypeError('no flow');
        hubble = req.readFlow(flow as Record<string, unknown>);
      } catch {
        stats.bad++;
        continue;
      }
      if (!req.matcher.match(hubble)) continue;
      heap.push({ hubble, timeMs: ms }, t);
      if (heap.size > window) out.push(heap.pop() as PickedFlow);
    }
    if (out.length) yield out;
    if (done) break;
  }
  const rest: PickedFlow[] = [];
  for (let p = heap.pop(); p !== undefined; p = heap.pop()) rest.push(p);
  if (rest.length && !req.cancelled()) yield rest;
}

/** Sends stored flows in order, at most `number` (0: all); how many were sent, or undefined when cancelled. */
export async function sendForward(stored: AsyncGenerator<PickedFlow[]>, number: number, sink: FlowSink, cancelled: () => boolean): Promise<number | undefined> {
  let sent = 0;
  for await (const batch of stored) {
    for (const p of batch) {
      if (cancelled()) return undefined;
      if (number > 0 && sent >= number) return sent;
      sent++;
      if (sink.add(p)) await sink.flush();
    }
  }
  return cancelled() ? undefined : sent;
}

/** Sends the last `want` stored flows (kept in a ring of `want` while reading); how many, or undefined when cancelled. */
export async function sendLast(stored: AsyncGenerator<PickedFlow[]>, want: number, sink: FlowSink, cancelled: () => boolean): Promise<number | undefined> {
  const last: PickedFlow[] = [];
  let n = 0;
  for await (const batch of stored) {
    for (const p of batch) {
      last[n % want] = p;
      n++;
    }
  }
  if (cancelled()) return undefined;
  const start = n <= want ? 0 : n % want;
  for (let i = 0; i < Math.min(n, want); i++) {
    if (cancelled()) return undefined;
    if (sink.add(last[(start + i) % want] as PickedFlow)) await sink.flush();
  }
  return Math.min(n, want);
}
