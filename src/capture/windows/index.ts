/** The Windows capture provider: pktmon and the node's HNS state (see pktmon.ts). */
export { FILTER_PREFIX, WINDOWS_METADATA_COMMANDS, parseEtl2pcapDrops, pktmonCommands, windowsCaptureProvider, type WindowsProviderOptions } from './pktmon.js';
