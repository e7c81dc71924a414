/** The Hubble service: flow ring, Hubble flow mapping, gRPC server (loaded only when hubble.enabled). */
export { createFlowRing, type FlowRing, type RingStats } from './ring.js';
export { toHubbleFlow, timestamp, timestampMs, EVENT_TYPE, type HubbleObject } from '../../flow/hubble/index.js';
export { loadFlowEnums, loadHubbleProtos, PROTO_OPTIONS, type FlowEnums, type HubbleProtos } from './proto.js';
export { startHubbleServer, type HubblePeer, type HubbleServer, type HubbleServerOptions, type PeerChange, type PeerSource } from './server.js';
export { compileFlowFilters, FilterError, type FlowMatcher } from '../../flow/hubble/index.js';
export { createHubbleService, type HubbleService, type HubbleServiceOptions } from './service.js';
export { hostPort, nodePeers, selfPeer, type PeerNode } from './peers.js';
export { hubbleServerCredentials, tlsServerName, type HubbleServerCredentials, type HubbleTlsFiles } from './tls.js';
export { createNamespaceTracker, type HubbleNamespace, type NamespaceTracker } from './namespaces.js';
export { rawStreamOf } from './frames.js';
export { readStoredFlows, type StoredFlowSource, type StoredReadRequest, type StoredReadStats } from './history.js';
