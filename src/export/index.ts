/**
 * Stored flow logs (issue 28; STYLE.md section 13): ContainerNetworkLog selection, JSON-lines files
 * with rotation, aggregation, OTLP. The contract is in types.ts.
 */
export type { FlowFilterObject, FlowLogRecord, FlowLogSink, FlowSelection, SelectionFilters } from './types.js';
export {
  createContainerNetworkLogSelection, includeFilterToFlowFilter, selectResource, selectorString, specToFlowFilters,
  type ContainerNetworkLogSelection, type ContainerNetworkLogSelectionOptions, type ResourceSelection,
} from './cnl.js';
