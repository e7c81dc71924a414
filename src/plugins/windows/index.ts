/** The Windows plugin list (Retina's enabledPlugin_win default is hnsstats; pktmon is pod level, off by default). */
import type { AnyPluginDefinition } from '../../plugin/index.js';
import { hnsstats } from './hnsstats/index.js';
import { pktmon } from './pktmon/index.js';
import { winutil } from './winutil/index.js';

export const plugins: readonly AnyPluginDefinition[] = [hnsstats, winutil, pktmon];

/** Nothing to give back on Windows: its heap returns freed pages itself (the Linux list calls malloc_trim). */
export const releaseFreeMemory = (): void => undefined;

/**
 * Not done on Windows: the working-set trim there (`EmptyWorkingSet`) would also page out the
 * process's private memory, not only what it mapped from files.
 */
export const releaseColdPages = undefined;
