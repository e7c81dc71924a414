/** packetforward's map: PERCPU_ARRAY key 0 ingress, key 1 egress, value { u64 packets; u64 bytes }. */
export const METRICS_MAP = 'retina_packetforward_metrics';

export const DIRECTION_KEYS = [
  { key: 0, direction: 'ingress' },
  { key: 1, direction: 'egress' },
] as const;

export interface ForwardTotals {
  readonly direction: 'ingress' | 'egress';
  readonly packets: number;
  readonly bytes: number;
}

/** A summed value ([packets, bytes]) as a row; an absent key counts as zero. */
export function toTotals(direction: 'ingress' | 'egress', sum: readonly number[] | undefined): ForwardTotals {
  return { direction, packets: sum?.[0] ?? 0, bytes: sum?.[1] ?? 0 };
}
