/** dropreason reads no keys of its own: pod-level flows follow enablePodLevel, ring size packetParserRingBufferSize. */
import type { ConfigSpec } from '../../../config/index.js';

export type DropreasonConfig = Record<string, never>;
export const dropreasonConfig: ConfigSpec<DropreasonConfig> = {};
