/**
 * Removing deleted pods' series: which labels of a family carry a pod's identity, and one pass that
 * removes every series of any pod in a batch (hash lookups per distinct tail, not a scan per pod).
 *
 * A side (local context's one side, or remote context's `source_`/`destination_`) identifies a pod
 * when it carries `podname` (with `namespace` when the label set has it) or, failing that, `ip`.
 * A side with neither (`namespace`, `workload`, `service`, `zone`, `port` alone) says nothing
 * pod-specific: its series are shared by every pod with those values and are left to their TTL.
 */
import { SEP } from '../series.js';
import type { GoneSets } from '../gone.js';

export { goneSets, type GonePods, type GoneSets } from '../gone.js';

/** Where one side's identity labels sit in a tail split at SEP (-1: not in the label set). */
export interface PodSide {
  readonly namespace: number;
  readonly podname: number;
  readonly ip: number;
}

/**
 * The sides of a family's label names that identify a pod. `fixed` labels come first and are not
 * in the tail; the tail starts with SEP, so context label k (0-based) is at split index k + 1.
 */
export function podSides(labelNames: readonly string[], fixed: number, prefixes: readonly string[]): PodSide[] {
  const at = (name: string): number => {
    const i = labelNames.indexOf(name);
    return i < fixed ? -1 : i - fixed + 1;
  };
  const out: PodSide[] = [];
  for (const p of prefixes) {
    const side = { namespace: at(`${p}namespace`), podname: at(`${p}podname`), ip: at(`${p}ip`) };
    if (side.podname >= 0 || side.ip >= 0) out.push(side);
  }
  return out;
}

/** Value `k` of a tail (`SEP v1 SEP v2 ...`, k ≥ 1), without splitting the rest. */
function valueAt(tail: string, k: number): string {
  let start = 0;
  for (let j = 0; j < k; j++) start = tail.indexOf(SEP, start) + 1;
  const end = tail.indexOf(SEP, start);
  return tail.slice(start, end < 0 ? tail.length : end);
}

/** Whether a tail belongs to a gone pod on any of `sides`: by name where the side has one, else by IP. */
export function tailOfGonePod(tail: string, sides: readonly PodSide[], gone: GoneSets): boolean {
  for (const s of sides) {
    if (s.podname >= 0) {
      const name = valueAt(tail, s.podname);
      if (s.namespace >= 0 ? gone.pods.has(valueAt(tail, s.namespace) + SEP + name) : gone.names.has(name)) return true;
    } else if (gone.ips.has(valueAt(tail, s.ip))) {
      return true;
    }
  }
  return false;
}
