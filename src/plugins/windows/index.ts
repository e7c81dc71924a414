/** The Windows plugin list (hnsstats, pktmon come with the Windows issue). */
import type { AnyPluginDefinition } from '../../plugin/index.js';

export const plugins: readonly AnyPluginDefinition[] = [];
