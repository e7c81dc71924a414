/** Reads packetforward's per-CPU totals (summed over CPUs). */
import { u32Key, type PerCpuReader } from '../../../ffi/linux/index.js';
import { DIRECTION_KEYS, toTotals, type ForwardTotals } from './decode.js';

/** The map's keys, made once. */
const KEYS = DIRECTION_KEYS.map(({ key, direction }) => ({ key: u32Key(key), direction }));

export function readForwardTotals(reader: PerCpuReader): ForwardTotals[] {
  return KEYS.map(({ key, direction }) => toTotals(direction, reader.sum(key)));
}
