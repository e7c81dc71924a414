/** The Windows bindings' public surface: typed wrappers over HCN, HNS and iphlpapi (koffi stays in this folder). */
export { DLLS, dllPath, type DllKey } from './libraries.js';
export { WindowsCallError, checkHresult, checkWin32, hresultHex, recordMessage, win32, win32OfHresult } from './errors.js';
export { parseGuid } from './guid.js';
export { openHcn, ATTACHED_SHARING_QUERY, ALL_ENDPOINTS_QUERY, type HcnClient } from './computenetwork.js';
export { openHns, type HnsClient } from './vmcompute.js';
export { openIphlpapi, AF_INET, AF_INET6, type IfRow, type Iphlpapi, type StatsRecord, type TcpStats } from './iphlpapi.js';
export { iphlpTypes, TABLE_ROWS, IF_COUNTERS } from './iphlpapi-types.js';
export { hnsOutput, parseEndpoint, parseEndpointIds, parseEndpointStats, parseJsonU64, parsePortMap, parseRemoteEndpoints, type EndpointStats, type HcnEndpoint } from './documents.js';
export { parseVfpCounters, parseVfpSwitchPorts, type VfpCounters, type VfpDirection, type VfpField, type VfpSwitchPort, type VfpSwitchPorts } from './vfp.js';
export { compareHnsVfp, isSwitchPort, type EndpointWithoutPort, type HnsVfpDisagreements, type HnsVfpInput, type PortWithoutEndpoint } from './hns-vfp.js';
export { runVfpctrl, runVfpctrlList, splitVfpOutput, vfpCommand, VFP_BATCH } from './vfpctrl.js';
export { startEtwSession, consumeEtwSession, queryEtwSession, ERROR_ALREADY_EXISTS, ERROR_WMI_INSTANCE_NOT_FOUND, PKTMON_SESSION_NAME, type EtwConsumer, type EtwSession, type EtwSessionOptions } from './etw.js';
export { ETW_LAYOUT, type EtwEvent, type SessionLosses } from './etw-layout.js';
export { consumeEtwNative, nativeEtwPath, parseRecords, NATIVE_ETW_ENV, NATIVE_ETW_FILE, type NativeEtwConsumer, type NativeEtwOptions, type NativeEtwStats } from './etw-native.js';
