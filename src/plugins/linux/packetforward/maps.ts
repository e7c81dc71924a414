/** Reads packetforward's per-CPU totals (summed over CPUs). */
import { u32Key, type PerCpuReader } from '../../../ffi/linux/index.js';
import { DIRECTION_KEYS, toTotals, type ForwardTotals } from './decode.js';

export function readForwardTotals(reader: PerCpuReader): ForwardTotals[] {
  return DIRECTION_KEYS.map(({ key, direction }) => toTotals(direction, reader.sum(u32Key(key))));
}
