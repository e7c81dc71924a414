/** The Linux plugin list: a plain array, in start order. Nothing registers itself on import. */
import type { AnyPluginDefinition } from '../../plugin/index.js';
import { releaseCleanFilePages, trimHeap } from '../../ffi/linux/index.js';
import { linuxutil } from './linuxutil/index.js';
import { infiniband } from './infiniband/index.js';
import { dropreason } from './dropreason/index.js';
import { packetforward } from './packetforward/index.js';
import { tcpretrans } from './tcpretrans/index.js';
import { dns } from './dns/index.js';
import { packetparser } from './packetparser/index.js';

export const plugins: readonly AnyPluginDefinition[] = [packetforward, dropreason, linuxutil, dns, infiniband, tcpretrans, packetparser];

/** Gives freed C-heap memory back to the system (glibc malloc_trim), for the agent to call now and then. */
export const releaseFreeMemory: () => void = trimHeap;

/**
 * Drops the agent's resident pages of read-only file mappings (the node binary's, the libraries'),
 * which come back on their next use: what start-up read once leaves the RSS (src/ffi/linux/memory.ts).
 * Called without arguments (the platform's signature): reads /proc/self/smaps.
 */
export const releaseColdPages = releaseCleanFilePages;
