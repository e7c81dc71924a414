/** The Linux eBPF data plane's public surface: typed wrappers over libbpf (koffi stays in this folder). */
export { openBpfObject, bpfObjectPath, packageRoot, parseVerifierStats, type VerifierStats, type BpfLoadOptions, type BpfMap, type BpfObject, type BpfProgram } from './object.js';
export { attachBySection, attachPacketSocketFilter } from './attach.js';
export { attachTc, attachTcAuto, attachTcx, type TcAttachment, type TcDirection } from './tc.js';
export { removeTcLeftovers } from './tc-leftovers.js';
export { mapKeys, mapReader, mapWriter, perCpuReader, u32Key, type MapReader, type MapWriter, type PerCpuReader } from './maps.js';
export { openRingBuffer, type RecordDecoder, type RingBufferOptions, type RingBufferReader } from './ring-buffer.js';
export { kernelEnum, kernelHasFunc, tracepointArgCount, tracepointArgTypes } from './btf.js';
export { dnsHooks, dropreasonHooks, packetforwardHooks, packetparserHooks, packetparserHooksFor, tcpretransHooks, type PacketparserHooks, type DropReasonSource, type DropreasonHookChoice, type HookChoice, type HookKind } from './hooks.js';
export { testRunProgram, testRunTimed } from './test-run.js';
export { kernelHasHelper } from './probe.js';
export { loadSys } from './sys.js';
export { openLinkDumper, LINK_STAT_NAMES, type LinkDumper, type LinkInfo } from './netlink.js';
export { openEthtool, type EthtoolClient, type EthtoolStats } from './ethtool.js';
export { errnos, trimHeap } from './libc.js';
export { releaseCleanFilePages, type ReleasedPages } from './memory.js';
export { watchLinkEvents, type LinkEventBatch, type LinkEvents } from './link-events.js';
export { listTcFilters, progNameById, type TcFilter } from './tc-filters.js';
export { countKeys, listPrograms, listTcxLinks, mapById, shippedProgramNames, MAX_KEYS_WALKED, type BpfMapInfo, type BpfProgramInfo, type TcxLinkInfo } from './inventory.js';
