/**
 * The contract of stored flow logs (issue 28): a FlowConsumer after the enricher (built by
 * setup.ts, handed by src/cli to the node pipeline as one of its `consumers`) that keeps the flows a
 * FlowSelection selects, makes each a FlowLogRecord and hands the records, in batches, to its
 * FlowLogSinks (a rotated JSON-lines file, an OTLP collector).
 *
 *   enriched batch ─▶ selection (Hubble FlowFilters: ContainerNetworkLog resources, hubble.export
 *                    allow/deny lists, the dynamic config file) ─▶ record (Hubble JSON, field mask,
 *                    or aggregated) ─▶ sinks
 *
 * Every selected flow ends as exactly one `flow_log_records_total{sink, result}` count per sink:
 * written or dropped with a reason. Nothing here blocks the drain or throws into it.
 */

/**
 * One flow-log record, JSON-ready: a flow in the shape `hubble observe -o json` prints a line
 * (`{"flow": {...}, "node_name": "...", "time": "..."}`, the Hubble flow in proto3 JSON field
 * names), or an aggregated record.
 */
export type FlowLogRecord = Readonly<Record<string, unknown>>;

/**
 * The JSON text of a batch's records (records-json.ts), shared by the sinks it is handed to: `at(i)` is
 * `JSON.stringify(records[i])`, made on first ask, or undefined when the record cannot be written.
 */
export interface RecordsJson {
  at(i: number): string | undefined;
}

/**
 * Where records go. `write` never blocks and never throws: what it cannot write, it counts dropped.
 * Disposing it flushes what it can within a bounded time and releases its files, sockets and timers.
 */
export interface FlowLogSink extends AsyncDisposable {
  /** `file`, `otlp`: the `sink` label of flow_log_records_total. */
  readonly name: string;
  /** `json`: the records' JSON, shared with the batch's other sinks (made here when not given). */
  write(records: readonly FlowLogRecord[], json?: RecordsJson): void;
}

/** A Hubble FlowFilter as a plain object (snake_case keys, as flow.proto and the Observer take it). */
export type FlowFilterObject = Readonly<Record<string, unknown>>;

/** The filters in force: a flow is selected when it matches any `allow` (or `allow` is empty) and no `deny`. */
export interface SelectionFilters {
  /** False exports nothing (no ContainerNetworkLog with filters yet, as ACNS does). */
  readonly active: boolean;
  readonly allow: readonly FlowFilterObject[];
  readonly deny: readonly FlowFilterObject[];
}

/** Which flows are exported; changes at run time (ContainerNetworkLog resources, the dynamic config file). */
export interface FlowSelection {
  current(): SelectionFilters;
  /** Called after every change of `current()`; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
}
