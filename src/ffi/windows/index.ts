/** The Windows bindings' public surface: typed wrappers over HCN, HNS and iphlpapi (koffi stays in this folder). */
export { DLLS, dllPath, type DllKey } from './libraries.js';
export { WindowsCallError, checkHresult, checkWin32, hresultHex, recordMessage, win32, win32OfHresult } from './errors.js';
export { normalizeGuid, parseGuid } from './guid.js';
export { openHcn, ATTACHED_SHARING_QUERY, ALL_ENDPOINTS_QUERY, type HcnClient } from './computenetwork.js';
export { openHns, type HnsClient } from './vmcompute.js';
export { openIphlpapi, AF_INET, AF_INET6, type IfRow, type Iphlpapi, type StatsRecord, type TcpStats } from './iphlpapi.js';
export { iphlpTypes, TABLE_ROWS, IF_COUNTERS } from './iphlpapi-types.js';
export { startEtwSession, consumeEtwSession, ERROR_ALREADY_EXISTS, type EtwConsumer, type EtwSession, type EtwSessionOptions } from './etw.js';
export { ETW_LAYOUT, type EtwEvent, type SessionLosses } from './etw-layout.js';
