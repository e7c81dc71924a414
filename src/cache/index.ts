export { IpCache, normalizeIp, type Endpoint, type EndpointLookup, type IpCacheStats, type NodeEndpoint, type PodEndpoint, type ServiceEndpoint, type Workload } from './ip-cache.js';
