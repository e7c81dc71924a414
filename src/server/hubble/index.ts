/** The Hubble service: flow ring, Hubble flow mapping, gRPC server (loaded only when hubble.enabled). */
export { createFlowRing, type FlowRing, type RingStats } from './ring.js';
export { toHubbleFlow, timestamp, timestampMs, EVENT_TYPE, type HubbleObject } from './map.js';
export { loadFlowEnums, loadHubbleProtos, PROTO_OPTIONS, type FlowEnums, type HubbleProtos } from './proto.js';
export { startHubbleServer, type HubblePeer, type HubbleServer, type HubbleServerOptions, type PeerChange, type PeerSource } from './server.js';
export { compileFlowFilters, FilterError, type FlowMatcher } from './filter.js';
