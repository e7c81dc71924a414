/**
 * The flow-log exporter: a FlowConsumer after the enricher (setup.ts builds it; src/cli hands it to
 * the node pipeline).
 * Per batch, on the drain, synchronously and without waiting on anything:
 *
 *   flow ─▶ Hubble flow.Flow (toHubbleFlow) ─▶ selection (allow/deny FlowFilters, compiled by the
 *   Observer's compiler) ─▶ record `{flow, node_name, time}` (protojson, field mask) ─▶ every sink
 *   (each record's JSON text made once and shared by the sinks: the file's line is the OTLP body)
 *
 * or, with aggregation, selected flows are folded into per-interval records (aggregate.ts) that the
 * timer hands to the sinks. Each flow looked at counts once in flow_log_flows_total{selected}; each
 * record counts once per sink in flow_log_records_total (the sink counts it; a sink that throws,
 * which the contract forbids, has the batch counted dropped{reason="sink_error"} here).
 *
 * The selection changes at run time (ContainerNetworkLog resources, the dynamic config file): it is
 * recompiled on each change; filters that do not compile are logged with the field and the last
 * good ones stay in force.
 */
import type { Flow, FlowBatch, FlowConsumer } from '../flow/index.js';
import { compileFlowFilters, FilterError, rfc3339, toHubbleFlow, type FieldMask, type FlowEnums, type FlowJson, type FlowMatcher } from '../flow/hubble/index.js';
import { errorFields, type Logger } from '../log/index.js';
import { catalog, type MetricsRegistry } from '../metrics/index.js';
import { createAggregator, type AggregationOptions, type Aggregator } from './aggregate.js';
import { sinkCounts } from './counts.js';
import { recordsJson } from './records-json.js';
import type { FlowLogRecord, FlowLogSink, FlowSelection } from './types.js';

/** flow.proto's enums (for the filters) and its JSON writer: `loadFlowProtos(protoDir)` from src/flow/hubble, loaded once per process. */
export interface ExportProtos {
  readonly enums: FlowEnums;
  readonly json: FlowJson;
}

export interface FlowExporterOptions {
  /** For logs: `static`, `dynamic:<name>`, `containernetworklog`. */
  readonly name: string;
  readonly selection: FlowSelection;
  /** Compiled with `protos.json.mask(paths)`; undefined writes every field. Not used with aggregation. */
  readonly fieldMask?: FieldMask | undefined;
  /** One record per (source, destination, protocol, port, verdict, direction) per interval instead of one per flow. */
  readonly aggregation?: AggregationOptions | undefined;
  readonly sinks: readonly FlowLogSink[];
  /** This node's name, for flows that do not carry one. */
  readonly nodeName: string;
  readonly protos: ExportProtos;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
}

/** Disposing it stops following the selection, flushes the aggregation and disposes the sinks. */
export interface FlowExporter extends FlowConsumer, AsyncDisposable {}

/** The JSON line record of one flow, as `hubble observe -o json` prints it. */
export function flowRecord(hubble: Readonly<Record<string, unknown>>, json: FlowJson, mask: FieldMask | undefined): FlowLogRecord {
  const flow = json.flow(hubble, mask);
  const time = flow['time'];
  return { flow, node_name: hubble['node_name'], time: typeof time === 'string' ? time : rfc3339(hubble['time']) };
}

export function createFlowExporter(o: FlowExporterOptions): FlowExporter {
  const log = o.log.child({ component: 'flow-log', exporter: o.name });
  const flows = o.metrics.counter(catalog.flowLogFlows);
  const sinks = o.sinks.map((sink) => ({ sink, counts: sinkCounts(o.metrics, sink.name) }));
  const deliver = (records: FlowLogRecord[]): void => {
    if (records.length === 0) return;
    // Each record's JSON is made once, for every sink (the file's line is the OTLP body).
    const json = recordsJson(records);
    for (const s of sinks) {
      try {
        s.sink.write(records, json);
      } catch (e) {
        s.counts.dropped('sink_error', records.length);
        log.error('a flow-log sink threw (its records are counted dropped)', { sink: s.sink.name, error: errorFields(e as Error) });
      }
    }
  };
  const aggregator: Aggregator | undefined = o.aggregation ? createAggregator(o.aggregation, { deliver }) : undefined;

  let matcher: FlowMatcher | undefined;
  const compile = (): void => {
    const sel = o.selection.current();
    if (!sel.active) {
      matcher = undefined;
      log.info('flow-log selection: inactive (nothing is exported)');
      return;
    }
    try {
      matcher = compileFlowFilters(sel.allow, sel.deny, o.protos.enums);
      log.info('flow-log selection in force', { allow: sel.allow.length, deny: sel.deny.length });
    } catch (e) {
      if (!(e instanceof FilterError)) throw e;
      // The selection's owner validates before publishing; a filter that still does not compile keeps the last good matcher.
      log.error('flow-log filters rejected; the previous selection stays in force', { field: e.field, error: e.message });
    }
  };
  compile();
  const unsubscribe = o.selection.onChange(() => {
    try {
      compile();
    } catch (e) {
      log.error('flow-log selection change failed; the previous selection stays in force', { error: errorFields(e as Error) });
    }
  });

  let closed = false;
  return {
    consume(batch: FlowBatch): void {
      if (closed) return;
      const m = matcher;
      const list = batch.flows;
      if (m === undefined) {
        if (list.length) flows.inc({ selected: 'false' }, list.length);
        return;
      }
      let selected = 0;
      const records: FlowLogRecord[] = [];
      for (let i = 0; i < list.length; i++) {
        const f = list[i] as Flow;
        const h = toHubbleFlow(f, o.nodeName);
        if (!m.match(h)) continue;
        selected++;
        if (aggregator) aggregator.add(f, h);
        else records.push(flowRecord(h, o.protos.json, o.fieldMask));
      }
      if (selected) flows.inc({ selected: 'true' }, selected);
      if (list.length > selected) flows.inc({ selected: 'false' }, list.length - selected);
      deliver(records);
    },
    async [Symbol.asyncDispose]() {
      if (closed) return;
      closed = true;
      unsubscribe();
      aggregator?.[Symbol.dispose]();
      const results = await Promise.allSettled(o.sinks.map((s) => s[Symbol.asyncDispose]()));
      for (const [i, r] of results.entries()) {
        if (r.status === 'rejected') log.error('a flow-log sink did not close cleanly', { sink: o.sinks[i]?.name, error: errorFields(r.reason as Error) });
      }
    },
  };
}
