/** The Linux plugin list: a plain array, in start order. Nothing registers itself on import. */
import type { AnyPluginDefinition } from '../../plugin/index.js';
import { linuxutil } from './linuxutil/index.js';
import { infiniband } from './infiniband/index.js';

export const plugins: readonly AnyPluginDefinition[] = [linuxutil, infiniband];
