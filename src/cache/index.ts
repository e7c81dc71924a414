export { IpCache, normalizeIp, type Endpoint, type IpCacheStats, type NodeEndpoint, type PodEndpoint, type ServiceEndpoint, type Workload } from './ip-cache.js';
