/**
 * Stored flow logs (issue 28; STYLE.md section 13): ContainerNetworkLog selection, JSON-lines files
 * with rotation, aggregation, OTLP. The contract is in types.ts; setup.ts wires every exporter the
 * config asks for (startFlowLogs). What holds something is released by disposing it
 * (`[Symbol.asyncDispose]`, or `[Symbol.dispose]` when that is synchronous), never by a `close()`.
 */
export type { FlowFilterObject, FlowLogRecord, FlowLogSink, FlowSelection, RecordsJson, SelectionFilters } from './types.js';
export { recordsJson } from './records-json.js';
export {
  createContainerNetworkLogSelection, includeFilterToFlowFilter, selectResource, selectorString, specToFlowFilters,
  type ContainerNetworkLogSelection, type ContainerNetworkLogSelectionOptions, type ResourceSelection,
} from './cnl.js';
export { createFlowExporter, flowRecord, type ExportProtos, type FlowExporter, type FlowExporterOptions } from './exporter.js';
export { settableSelection, staticSelection, type SettableSelection } from './selection.js';
export { sinkCounts, type DropReason, type SinkCounts } from './counts.js';
export type { AggregationOptions } from './aggregate.js';
export { createFileSink, backupName, backupTimeMs, dropReasonOf, listBackups, type FileSink, type FileSinkOptions } from './file.js';
export { startFlowLogs, type FlowLogs, type FlowLogsOptions } from './setup.js';
export { checkExportFilters, ExportConfigError, fileSinkFor } from './check.js';
export { parseDynamicConfig, startDynamicExporters, type DynamicEntry, type DynamicExporters, type DynamicExportersOptions } from './dynamic.js';
export { createAggregator, type Aggregator } from './aggregate.js';
export { createExportHistory, readRotatedLines, type ExportHistory, type ExportHistoryOptions, type RotatedReadOptions } from './history.js';
