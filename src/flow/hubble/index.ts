/**
 * Our flows in Hubble's shape, below every user of it: the mapping to Hubble `flow.Flow` objects
 * (map.ts), Hubble's FlowFilter semantics over them (filter.ts) and flow.proto's enums the filter
 * resolves (enums.ts), flow.proto's JSON writer (json.ts) over proto-loader's descriptors (descriptors.ts),
 * and the Hubble protos parsed once for every user (protos.ts). The Hubble Observer (src/server/hubble)
 * and the flow-log export (src/export) both build on these; neither owns them.
 */
export { toHubbleFlow, timestamp, timestampMs, dropReasonOfSummary, EVENT_TYPE, type HubbleObject } from './map.js';
export { compileFlowFilters, FilterError, type ExtraFilters, type FlowMatcher, type HubbleFlow } from './filter.js';
export { flowEnums, loadFlowEnums, PROTO_OPTIONS, type FlowEnums } from './enums.js';
export { enumValues, messageFields, planner, resolveTypeName, type EnumValue, type FieldDescriptor } from './descriptors.js';
export { createFlowJson, loadFlowProtos, rfc3339, FieldMaskError, type FieldMask, type FlowJson } from './json.js';
export { FLOW_PROTO_FILES, hubbleProtoFiles, HUBBLE_PROTO_FILES, type HubbleProtoFiles } from './protos.js';
export { checkFilterLimits, DEFAULT_FILTER_LIMITS, FilterLimitError, type FilterLimits } from './limits.js';
export { createFlowJsonReader, parseRfc3339, type FlowJsonReader } from './json-read.js';
export { filterImplies, uncoveredBy } from './filter-cover.js';
export { tlsServerName } from './tls-name.js';
