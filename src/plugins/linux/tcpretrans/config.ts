/** tcpretrans reads no keys of its own: per-connection records follow enablePodLevel. */
import type { ConfigSpec } from '../../../config/index.js';

export type TcpretransConfig = Record<string, never>;
export const tcpretransConfig: ConfigSpec<TcpretransConfig> = {};
