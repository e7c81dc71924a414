/**
 * packetparser's own keys. Retina's keys it reads (enablePodLevel, dataAggregationLevel,
 * dataSamplingRate, conntrackReportInterval, enableConntrackMetrics, bypassLookupIPOfInterest,
 * packetParserRingBufferSize, filterMapMaxEntries) are agent keys, in ctx.agent.
 */
import { intKey, listKey, type ConfigSpec } from '../../../config/index.js';
import { tcModeKey, type TcMode } from '../ebpf-shared/hooks.js';

export interface PacketparserConfig {
  /** Host interfaces watched with dataAggregationLevel low; empty: the default routes' interfaces. */
  readonly hostInterfaces: readonly string[];
  /** tcx (Linux 6.6+), clsact, or auto: tcx where the kernel has it. */
  readonly tcMode: TcMode;
  /** Entries of the in-kernel connection table (LRU). */
  readonly conntrackMaxEntries: number;
}

export const packetparserConfig: ConfigSpec<PacketparserConfig> = {
  hostInterfaces: listKey(
    'packetParserHostInterfaces',
    [],
    "Ours: the host interfaces packetparser also watches when dataAggregationLevel is low (empty: the default routes' interfaces, found at start).",
  ),
  tcMode: tcModeKey('packetParserTcMode', 'packetparser'),
  conntrackMaxEntries: intKey(
    'packetParserConntrackMaxEntries',
    65_536,
    'Ours: connections the in-kernel connection table holds (LRU; about 270 bytes each).',
    { min: 1024, max: 4_194_304 },
  ),
};
